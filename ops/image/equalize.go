package image

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "experimental.equalize",
		Doc: "Equalizes the histogram of every channel of HWC uint8 images, as DALI's " +
			"experimental.equalize (OpenCV's equalizeHist per channel).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
	})
	engine.RegisterBackend("experimental.equalize", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &equalizeOp{args: a}, nil
	})
}

type equalizeOp struct{ args *engine.Args }

func (o *equalizeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{in[0]}, nil
}

func (o *equalizeOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *equalizeOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	copy(out.Data, in.Data)
	im := augImage{pix: out.Data[:len(in.Data)], h: in.Shape[0], w: in.Shape[1], c: in.Shape[2]}
	im.equalize()
	return nil
}
