package transforms

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "transforms.crop",
		Doc: "Produces an affine transform (float32 [ndim, ndim+1]) that maps the box [from_start, from_end] onto " +
			"[to_start, to_end], per dimension scale = (to_end - to_start) / (from_end - from_start), or applies it to " +
			"the input transform. The number of dimensions is the longest argument's length (one value: every dimension). Where from_start equals from_end the scale is 1.",
		Sequences: engine.Sequences{PerFrame: true, FramesFromArgs: true},
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"transform"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "from_start", Type: engine.ArgFloatList, Default: []float64{0}, TensorInput: true, Doc: "the source box's start"},
			{Name: "from_end", Type: engine.ArgFloatList, Default: []float64{1}, TensorInput: true, Doc: "the source box's end"},
			{Name: "to_start", Type: engine.ArgFloatList, Default: []float64{0}, TensorInput: true, Doc: "the destination box's start"},
			{Name: "to_end", Type: engine.ArgFloatList, Default: []float64{1}, TensorInput: true, Doc: "the destination box's end"},
			{Name: "absolute", Type: engine.ArgBool, Default: false, Doc: "swap start and end where start > end, so that the transform does not flip"},
			reverseOrderArg, seedArg,
		},
	})
	engine.RegisterBackend("transforms.crop", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return newTransformOp(a, crop{a}, cropArgs[:]...), nil
	})
}

var cropArgs = [4]string{"from_start", "from_end", "to_start", "to_end"}

type crop struct{ args *engine.Args }

func (g crop) dims(ws *engine.Workspace, st *state) (int, error) {
	n, prev := 0, ""
	for i, name := range cropArgs {
		v, err := g.args.FloatsAt(ws, name, st.vals[i])
		if err != nil {
			return 0, err
		}
		st.vals[i] = v
		if len(v) == 0 {
			return 0, argError(g.args, ws, name, "must not be empty")
		}
		if len(v) > 1 {
			if n, err = agree(g.args, ws, n, prev, len(v), name); err != nil {
				return 0, err
			}
			prev = name
		}
	}
	if n == 0 {
		n = 1
	}
	return n, nil
}

func (g crop) matrix(ws *engine.Workspace, st *state, n int, m []float64) error {
	var box [4][]float64
	for i, name := range cropArgs {
		v, err := broadcastTo(g.args, ws, name, st.vals[i], n)
		if err != nil {
			return err
		}
		box[i] = v
	}
	abs := g.args.Bool("absolute")
	for d := 0; d < n; d++ {
		fs, fe, ts, te := box[0][d], box[1][d], box[2][d], box[3][d]
		if abs {
			fs, fe = math.Min(fs, fe), math.Max(fs, fe)
			ts, te = math.Min(ts, te), math.Max(ts, te)
		}
		s := 1.0 // a degenerate source box: only the translation is defined
		if fe != fs {
			s = (te - ts) / (fe - fs)
		}
		m[d*(n+2)] = s
		m[d*(n+1)+n] = ts - s*fs
	}
	return nil
}
