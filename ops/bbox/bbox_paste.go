package bbox

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "bbox_paste",
		Doc: "Transforms bounding boxes (float32 [N, 4], relative coordinates) as paste transforms their image: " +
			"the image becomes 1/ratio of the canvas and moves by paste_x * (1 - 1/ratio), paste_y * (1 - 1/ratio); " +
			"a coordinate x becomes x / ratio + paste_x * (1 - 1/ratio), a width w becomes w / ratio.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"boxes"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "ratio", Type: engine.ArgFloat, Required: true, TensorInput: true, Doc: "canvas side / image side, >= 1"},
			{Name: "paste_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "horizontal position of the image in the canvas, 0 to 1"},
			{Name: "paste_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "vertical position of the image in the canvas, 0 to 1"},
			{Name: "ltrb", Type: engine.ArgBool, Default: false, Doc: "boxes are [left, top, right, bottom] (default: [x, y, width, height])"},
		},
	})
	engine.RegisterBackend("bbox_paste", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if !a.AnyPerSample("ratio") && a.Float("ratio") < 1 {
			return nil, a.Errorf("ratio", "must be >= 1, got %g", a.Float("ratio"))
		}
		return &bboxPasteOp{args: a, ltrb: a.Bool("ltrb")}, nil
	})
}

type bboxPasteOp struct {
	args *engine.Args
	ltrb bool
}

func (o *bboxPasteOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := checkBoxesMeta(o.args, in[0], "the input"); err != nil {
		return nil, err
	}
	return []engine.TensorMeta{{DType: engine.Float32, Layout: in[0].Layout, Shape: []int{in[0].Shape[0], 4}}}, nil
}

func (o *bboxPasteOp) Setup(ws *engine.Workspace) error {
	if _, err := numBoxes(ws.In[0]); err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *bboxPasteOp) Run(ws *engine.Workspace) error {
	ratio, err := o.args.FloatAt(ws, "ratio")
	if err != nil {
		return err
	}
	if !(ratio >= 1) {
		return o.args.ArgDataErrorf(ws, "ratio", "must be >= 1, got %g", ratio)
	}
	var shift [2]float64
	for i, n := range [2]string{"paste_x", "paste_y"} {
		p, err := o.args.FloatAt(ws, n)
		if err != nil {
			return err
		}
		if !(p >= 0 && p <= 1) {
			return o.args.ArgDataErrorf(ws, n, "must be in [0, 1], got %g", p)
		}
		shift[i] = p * (1 - 1/ratio)
	}
	in, out := ws.In[0].Data, ws.Out[0].Data
	for i := 0; i < ws.In[0].Shape[0]; i++ {
		for k := 0; k < 4; k++ {
			v := float64(f32(in, 4*i+k)) / ratio
			if k < 2 || o.ltrb {
				v += shift[k%2]
			}
			putF32(out, 4*i+k, float32(v))
		}
	}
	return nil
}
