package image

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "posterize",
		Doc:       "Keeps the top bits bits of every channel of HWC uint8 images.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		InputLayouts: []string{"HWC"}, InputDtypes: []engine.DType{engine.UInt8},
		Args: []engine.ArgSpec{
			{Name: "bits", Type: engine.ArgInt, Default: 4, TensorInput: true, Doc: "bits kept, 1 to 8; may come per sample"},
		},
	})
	engine.RegisterBackend("posterize", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if b := a.Int("bits"); !a.AnyPerSample("bits") && (b < 1 || b > 8) {
			return nil, a.Errorf("bits", "expected 1 to 8, got %d", b)
		}
		return &posterizeOp{args: a}, nil
	})
}

type posterizeOp struct{ args *engine.Args }

// Infer describes the output at build time. The graph has checked the input against
// the schema's InputLayouts and InputDtypes already.
func (o *posterizeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{in[0]}, nil
}

// Setup gives each sample's output shape; the executor then provides the memory.
func (o *posterizeOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

// Run fills the output and never allocates.
func (o *posterizeOp) Run(ws *engine.Workspace) error {
	bits, err := o.args.IntAt(ws, "bits") // the constant, or this sample's value
	if err != nil {
		return err
	}
	if bits < 1 || bits > 8 {
		return o.args.ArgDataErrorf(ws, "bits", "expected 1 to 8, got %d", bits)
	}
	mask := byte(0xff << (8 - bits))
	for i, v := range ws.In[0].Data {
		ws.Out[0].Data[i] = v & mask
	}
	return nil
}
