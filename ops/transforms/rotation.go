package transforms

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "transforms.rotation",
		Doc: "Produces a rotation affine transform (float32 [ndim, ndim+1]) by angle degrees about center, or " +
			"applies it to the input transform. 2-D (counterclockwise for positive angles: [[cos, -sin], [sin, cos]]) " +
			"unless axis is given: then 3-D, about that axis (right-hand rule).",
		Sequences: engine.Sequences{PerFrame: true, FramesFromArgs: true},
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"transform"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "angle", Type: engine.ArgFloat, Required: true, TensorInput: true, Doc: "angle of rotation, in degrees"},
			{Name: "axis", Type: engine.ArgFloatList, TensorInput: true, Doc: "axis of rotation (3 values; 3-D transforms only)"},
			centerArg, reverseOrderArg, seedArg,
		},
	})
	engine.RegisterBackend("transforms.rotation", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return newTransformOp(a, rotation{a}, "angle", "axis", "center"), nil
	})
}

type rotation struct{ args *engine.Args }

func (g rotation) dims(ws *engine.Workspace, st *state) (int, error) {
	a := g.args
	n := 2
	if a.Given("axis") {
		v, err := a.FloatsAt(ws, "axis", st.vals[0])
		if err != nil {
			return 0, err
		}
		st.vals[0] = v
		if len(v) != 3 {
			return 0, argError(a, ws, "axis", "expected 3 values (a 3-D axis), got %d", len(v))
		}
		n = 3
	}
	c, err := listDims(a, ws, "center", &st.vals[1])
	if err != nil {
		return 0, err
	}
	if c == 0 && len(st.vals[1]) == 1 {
		return 0, argError(a, ws, "center", "expected %d values (one per dimension), got 1", n)
	}
	return agree(a, ws, n, "axis", c, "center")
}

func (g rotation) matrix(ws *engine.Workspace, st *state, n int, m []float64) error {
	a := g.args
	deg, err := a.FloatAt(ws, "angle")
	if err != nil {
		return err
	}
	rad := deg * math.Pi / 180
	c, s := math.Cos(rad), math.Sin(rad)
	switch n {
	case 2:
		if a.Given("axis") {
			return argError(a, ws, "axis", "applies to 3-D transforms only; the transform is 2-D")
		}
		m[0], m[1], m[3], m[4] = c, -s, s, c
	case 3:
		if !a.Given("axis") {
			return a.DataErrorf(ws, "a 3-D rotation needs axis")
		}
		ax := st.vals[0]
		l := math.Sqrt(ax[0]*ax[0] + ax[1]*ax[1] + ax[2]*ax[2])
		if l == 0 || math.IsNaN(l) || math.IsInf(l, 0) {
			return argError(a, ws, "axis", "must be a nonzero finite vector, got %v", ax)
		}
		x, y, z := ax[0]/l, ax[1]/l, ax[2]/l
		t := 1 - c
		// Rodrigues' rotation formula, row by row.
		rot := [9]float64{
			c + x*x*t, x*y*t - z*s, x*z*t + y*s,
			y*x*t + z*s, c + y*y*t, y*z*t - x*s,
			z*x*t - y*s, z*y*t + x*s, c + z*z*t,
		}
		for r := 0; r < 3; r++ {
			copy(m[r*4:r*4+3], rot[r*3:r*3+3])
		}
	default:
		return a.DataErrorf(ws, "rotations are 2-D or 3-D; the input transform is %d-D", n)
	}
	return centerOf(a, ws, st, 1, m, n)
}
