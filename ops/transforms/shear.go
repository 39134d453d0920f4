package transforms

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "transforms.shear",
		Doc: "Produces a shear affine transform (float32 [ndim, ndim+1]) about center, or applies it to the input " +
			"transform. 2-D: shear = (sxy, syx) gives [[1, sxy], [syx, 1]]; 3-D: (sxy, sxz, syx, syz, szx, szy) gives " +
			"[[1, sxy, sxz], [syx, 1, syz], [szx, szy, 1]]. angles (degrees, in [-90, 90]) give shear = tan(angle).",
		Sequences: engine.Sequences{PerFrame: true, FramesFromArgs: true},
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"transform"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "shear", Type: engine.ArgFloatList, TensorInput: true, Doc: "shear factors: 2 values (2-D) or 6 (3-D); exclusive with angles"},
			{Name: "angles", Type: engine.ArgFloatList, TensorInput: true, Doc: "shear angles in degrees, in [-90, 90]: 2 values (2-D) or 6 (3-D)"},
			centerArg, reverseOrderArg, seedArg,
		},
	})
	engine.RegisterBackend("transforms.shear", "cpu", func(a *engine.Args) (engine.Operator, error) {
		switch {
		case a.Given("shear") && a.Given("angles"):
			return nil, a.Errorf("angles", "give shear or angles, not both")
		case !a.Given("shear") && !a.Given("angles"):
			return nil, a.Invalidf("give shear (factors) or angles (degrees)")
		}
		return newTransformOp(a, shear{a}, "shear", "angles", "center"), nil
	})
}

type shear struct{ args *engine.Args }

func (g shear) source() string {
	if g.args.Given("angles") {
		return "angles"
	}
	return "shear"
}

func (g shear) dims(ws *engine.Workspace, st *state) (int, error) {
	a, name := g.args, g.source()
	v, err := a.FloatsAt(ws, name, st.vals[0])
	if err != nil {
		return 0, err
	}
	st.vals[0] = v
	n := 0
	switch len(v) {
	case 2:
		n = 2
	case 6:
		n = 3
	default:
		return 0, argError(a, ws, name, "expected 2 values (2-D) or 6 (3-D), got %d", len(v))
	}
	c, err := listDims(a, ws, "center", &st.vals[1])
	if err != nil {
		return 0, err
	}
	return agree(a, ws, n, name, c, "center")
}

func (g shear) matrix(ws *engine.Workspace, st *state, n int, m []float64) error {
	a, name := g.args, g.source()
	v := st.vals[0]
	if name == "angles" {
		for i, deg := range v {
			if !(deg >= -90 && deg <= 90) { // DALI's closed range: +-90 gives tan's huge finite value
				return argError(a, ws, "angles", "must be in [-90, 90] degrees, got %g", deg)
			}
			v[i] = math.Tan(deg * math.Pi / 180)
		}
	}
	// The factors fill the off-diagonal entries row by row.
	k := 0
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			if r != c {
				m[r*(n+1)+c] = v[k]
				k++
			}
		}
	}
	return centerOf(a, ws, st, 1, m, n)
}
