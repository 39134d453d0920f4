package image

import (
	"strings"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "noise.salt_and_pepper",
		Doc: "Applies salt-and-pepper noise to the input, as DALI does: each value (each pixel, all " +
			"its channels together, unless per_channel) becomes salt_val with probability prob * " +
			"salt_vs_pepper, pepper_val with probability prob * (1 - salt_vs_pepper), else is kept. " +
			"The channels are the layout's C axis (the last axis when the layout is empty). Any shape " +
			"and numeric type; prob, salt_vs_pepper, salt_val and pepper_val may come per sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"},
		Args: []engine.ArgSpec{
			{Name: "prob", Type: engine.ArgFloat, Default: 0.05, TensorInput: true, Doc: "probability of a value being replaced, in [0, 1]"},
			{Name: "salt_vs_pepper", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "share of salt among the replaced values, in [0, 1]"},
			{Name: "salt_val", Type: engine.ArgFloat, TensorInput: true, Doc: "value of salt; default the type's maximum (1.0 for floats)"},
			{Name: "pepper_val", Type: engine.ArgFloat, TensorInput: true, Doc: "value of pepper; default the type's minimum (-1.0 for floats)"},
			{Name: "per_channel", Type: engine.ArgBool, Default: false, Doc: "draw the noise for every channel independently"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "as in DALI, operators given the same seed draw the same numbers (-1: a stream of their own); with the pipeline seed"},
		},
	})
	engine.RegisterBackend("noise.salt_and_pepper", "cpu", func(a *engine.Args) (engine.Operator, error) {
		for _, n := range []string{"prob", "salt_vs_pepper"} {
			if v := a.Float(n); !(v >= 0 && v <= 1) {
				return nil, a.Errorf(n, "expected a value in [0, 1], got %g", v)
			}
		}
		return &saltPepperOp{args: a, cAxis: -1}, nil
	})
}

type saltPepperOp struct {
	args  *engine.Args
	cAxis int // channel axis, -1 when every element is drawn alone
}

func (o *saltPepperOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	out, err := noiseInfer(o.args, in[0])
	if err != nil {
		return nil, err
	}
	o.cAxis = -1
	if !o.args.Bool("per_channel") && len(in[0].Shape) > 0 {
		if in[0].Layout == "" {
			o.cAxis = len(in[0].Shape) - 1
		} else {
			o.cAxis = strings.IndexByte(in[0].Layout, 'C')
		}
	}
	return out, nil
}

func (o *saltPepperOp) Setup(ws *engine.Workspace) error {
	noiseSetup(ws)
	return nil
}

func (o *saltPepperOp) Run(ws *engine.Workspace) error {
	a := o.args
	prob, err := noiseFloat(a, ws, "prob", 0, 1)
	if err != nil {
		return err
	}
	svp, err := noiseFloat(a, ws, "salt_vs_pepper", 0, 1)
	if err != nil {
		return err
	}
	in, out := ws.In[0], ws.Out[0]
	pepper, salt := typeRange(in.DType)
	if a.Given("salt_val") {
		if salt, err = a.FloatAt(ws, "salt_val"); err != nil {
			return err
		}
	}
	if a.Given("pepper_val") {
		if pepper, err = a.FloatAt(ws, "pepper_val"); err != nil {
			return err
		}
	}
	sz := in.DType.Size()
	var saltB, pepperB [8]byte
	engine.WriteScalarSat(saltB[:], in.DType, salt)
	engine.WriteScalarSat(pepperB[:], in.DType, pepper)
	n := numElements(in.Shape)
	copy(out.Data[:n*sz], in.Data[:n*sz])
	// Elements come as outer x channels x inner; one draw covers all channels of a pixel.
	outer, ch, inner := n, 1, 1
	if o.cAxis >= 0 && o.cAxis < len(in.Shape) {
		ch = in.Shape[o.cAxis]
		outer, inner = 1, 1
		for i, d := range in.Shape {
			if i < o.cAxis {
				outer *= d
			} else if i > o.cAxis {
				inner *= d
			}
		}
	}
	if ch == 0 {
		return nil
	}
	pSalt := prob * svp
	r := ws.RNG
	for i := 0; i < outer; i++ {
		for j := 0; j < inner; j++ {
			u := r.Float64()
			if u >= prob {
				continue
			}
			v := pepperB[:sz]
			if u < pSalt {
				v = saltB[:sz]
			}
			base := i*ch*inner + j
			for c := 0; c < ch; c++ {
				copy(out.Data[(base+c*inner)*sz:], v)
			}
		}
	}
	return nil
}
