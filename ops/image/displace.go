package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// displaceOp is what water and sphere share (DALI's displacement filters): HWC uint8 or
// float images resampled along a point map, nearest or bilinear, with fill_value outside
// the input; mask (per sample) 0 passes the sample through unchanged.
type displaceOp struct {
	args   *engine.Args
	interp imaging.Interp
	fill   float64
	// mapFor returns the point map of an h x w image.
	mapFor func(w, h int) func(x, y int) (float64, float64)
}

var displaceDTypes = []engine.DType{engine.UInt8, engine.Float32}

func displaceArgs() []engine.ArgSpec {
	return []engine.ArgSpec{
		{Name: "fill_value", Type: engine.ArgFloat, Default: 0.0, Doc: "value of pixels from outside the input"},
		{Name: "interp_type", Type: engine.ArgInterpType, Default: "NN", Doc: "INTERP_NN or INTERP_LINEAR"},
		{Name: "mask", Type: engine.ArgInt, Default: 1, TensorInput: true, Doc: "1 applies the augmentation, 0 passes the sample through; may come per sample"},
	}
}

func newDisplaceOp(a *engine.Args, op string) (*displaceOp, error) {
	interp, _, _, err := warpSampling(a, op)
	if err != nil {
		return nil, err
	}
	return &displaceOp{args: a, interp: interp, fill: a.Float("fill_value")}, nil
}

func (o *displaceOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{in[0]}, nil
}

func (o *displaceOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	ws.Out[0].Layout = ws.In[0].Layout
	return nil
}

func (o *displaceOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	mask, err := o.args.IntAt(ws, "mask")
	if err != nil {
		return err
	}
	if mask == 0 {
		copy(out.Data, in.Data[:in.NumBytes()])
		return nil
	}
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	p := imaging.Displacement{Interp: o.interp, Fill: o.fill, Map: o.mapFor(w, h)}
	if in.DType == engine.Float32 {
		err = imaging.DisplaceImage(&p, imaging.Elems[float32](out.Data), w, h, imaging.Elems[float32](in.Data), w, h, c)
	} else {
		err = imaging.DisplaceImage(&p, out.Data, w, h, in.Data, w, h, c)
	}
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	return nil
}
