package image

import (
	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
	"github.com/godali/godali/ops/decoders"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "slice",
		Doc: "Cuts the window given by the anchor and shape inputs (e.g. from random_bbox_crop: relative (x, y) " +
			"values by default) out of HWC uint8 images.",
		MinInputs: 3, MaxInputs: 3, Outputs: []string{"images"}, HostOnly: true, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: append(append([]engine.ArgSpec{}, decoders.SliceArgs...),
			engine.ArgSpec{Name: "dtype", Type: engine.ArgDType, Default: "UINT8", Doc: "output type (only UINT8)"}),
	})
	engine.RegisterBackend("slice", "cpu", func(a *engine.Args) (engine.Operator, error) {
		s, err := decoders.ParseSlice(a)
		if err != nil {
			return nil, err
		}
		if a.DType("dtype") != engine.UInt8 {
			return nil, a.Errorf("dtype", "only UINT8 is supported")
		}
		return &sliceOp{args: a, slice: s}, nil
	})
}

type sliceOp struct {
	args  *engine.Args
	slice *decoders.Slice
}

type sliceWindow struct{ r codec.Rect }

func (o *sliceOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	c := in[0].Shape[2]
	if err := o.slice.CheckInputs(in); err != nil {
		return nil, err
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "HWC", Shape: []int{-1, -1, c}}}, nil
}

func (o *sliceOp) NewWorkerState() any { return &sliceWindow{} }

func (o *sliceOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	r, _, err := o.slice.Window(ws, in.Shape[1], in.Shape[0])
	if err != nil {
		return err
	}
	ws.State.(*sliceWindow).r = r
	ws.Out[0].SetShape(r.H, r.W, in.Shape[2])
	return nil
}

func (o *sliceOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	r := ws.State.(*sliceWindow).r
	return imaging.Crop(ws.Out[0].Data, in.Data, in.Shape[1], in.Shape[0], in.Shape[2], r.X, r.Y, r.W, r.H, o.slice.Fill)
}
