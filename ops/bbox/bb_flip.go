package bbox

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "bb_flip",
		Doc: "Flips bounding boxes (float32 [N, 4], coordinates relative to the image) horizontally " +
			"and/or vertically, as flip does to the image: x becomes 1 - x.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"boxes"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "ltrb", Type: engine.ArgBool, Default: false, Doc: "boxes are [left, top, right, bottom] (default: [x, y, width, height])"},
			{Name: "horizontal", Type: engine.ArgInt, Default: 1, TensorInput: true, Doc: "flip horizontally when nonzero"},
			{Name: "vertical", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip vertically when nonzero"},
		},
	})
	engine.RegisterBackend("bb_flip", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &bbFlipOp{args: a, ltrb: a.Bool("ltrb")}, nil
	})
}

type bbFlipOp struct {
	args *engine.Args
	ltrb bool
}

func (o *bbFlipOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := checkBoxesMeta(o.args, in[0], "the input"); err != nil {
		return nil, err
	}
	return []engine.TensorMeta{{DType: engine.Float32, Shape: []int{in[0].Shape[0], 4}}}, nil
}

func (o *bbFlipOp) Setup(ws *engine.Workspace) error {
	if _, err := numBoxes(ws.In[0]); err != nil {
		return err
	}
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *bbFlipOp) flag(ws *engine.Workspace, name string) (bool, error) {
	return o.args.BoolAt(ws, name)
}

func (o *bbFlipOp) Run(ws *engine.Workspace) error {
	h, err := o.flag(ws, "horizontal")
	if err != nil {
		return err
	}
	v, err := o.flag(ws, "vertical")
	if err != nil {
		return err
	}
	in, out := ws.In[0].Data, ws.Out[0].Data
	copy(out, in)
	n := ws.In[0].Shape[0]
	for i := 0; i < n; i++ {
		for axis, on := range [2]bool{h, v} {
			if !on {
				continue
			}
			lo, hi := 4*i+axis, 4*i+axis+2
			if o.ltrb {
				putF32(out, lo, 1-f32(in, hi))
				putF32(out, hi, 1-f32(in, lo))
			} else {
				putF32(out, lo, 1-f32(in, lo)-f32(in, hi))
			}
		}
	}
	return nil
}
