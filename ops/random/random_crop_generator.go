package random

import (
	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/ops/internal/window"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "random_crop_generator",
		Doc: "Draws a random crop window of an image from its shape ([H, W, ...], e.g. from peek_image_shape), " +
			"as decoders.image_random_crop does (area and aspect ratio as torchvision's RandomResizedCrop, center " +
			"crop after num_attempts failures). Outputs the window's anchor (y, x) and shape (h, w), int64, for slice " +
			"or decoders.image_slice with axes (0, 1).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"anchor", "shape"}, HostOnly: true,
		Args: append(append([]engine.ArgSpec{}, window.RandomCropArgs...),
			engine.ArgSpec{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"}),
	})
	engine.RegisterBackend("random_crop_generator", "cpu", func(a *engine.Args) (engine.Operator, error) {
		rc, err := window.ParseRandomCrop(a)
		if err != nil {
			return nil, err
		}
		return &cropGenOp{args: a, crop: rc}, nil
	})
}

type cropGenOp struct {
	args *engine.Args
	crop *window.RandomCrop
}

func (o *cropGenOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if len(m.Shape) != 1 || m.DType.Size() == 0 || m.DType.IsFloat() || (m.Shape[0] >= 0 && m.Shape[0] < 2) {
		return nil, o.args.Invalidf("input 0 must be an integer image shape [H, W, ...] (e.g. from peek_image_shape), got %s %v", m.DType, m.Shape)
	}
	meta := engine.TensorMeta{DType: engine.Int64, Shape: []int{2}}
	return []engine.TensorMeta{meta, meta}, nil
}

func (o *cropGenOp) Setup(ws *engine.Workspace) error {
	t := ws.In[0]
	if len(t.Shape) != 1 || t.Shape[0] < 2 {
		return o.args.DataErrorf(ws, "expected an image shape [H, W, ...], got a tensor of shape %v", t.Shape)
	}
	ws.Out[0].SetShape(2)
	ws.Out[1].SetShape(2)
	return nil
}

func (o *cropGenOp) Run(ws *engine.Workspace) error {
	t := ws.In[0]
	sz := t.DType.Size()
	h, w := int(engine.ReadScalar(t.Data, t.DType)), int(engine.ReadScalar(t.Data[sz:], t.DType))
	if h < 0 || w < 0 {
		return o.args.DataErrorf(ws, "the image shape %dx%d is negative", h, w)
	}
	var r codec.Rect
	if h > 0 && w > 0 {
		r = o.crop.Window(w, h, ws.RNG)
	} // an empty image (0 rows or columns): DALI gives the empty window, anchor 0 shape 0
	for i, v := range [4]int{r.Y, r.X, r.H, r.W} {
		engine.WriteScalar(ws.Out[i/2].Data[8*(i%2):], engine.Int64, float64(v))
	}
	return nil
}
