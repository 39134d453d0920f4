package bbox

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "ssd_random_crop",
		Doc: "SSD's random crop of an HWC (or single-channel HW) image with its boxes (float32 [N, 4], ltrb, relative) and labels: each " +
			"attempt picks the whole image or a minimum IoU among 0, 0.1, 0.3, 0.5, 0.7, 0.9 and then up to " +
			"num_attempts windows with sides in [0.3, 1] of the image and width/height in [0.5, 2], taking the first " +
			"whose IoU with every box reaches it and that keeps a box (boxes whose center lies in it). Outputs the " +
			"cropped image, the kept boxes clipped and relative to the window, and their labels (as random_bbox_crop, " +
			"which gives the window instead of cropping).",
		MinInputs: 3, MaxInputs: 3, Outputs: []string{"images", "boxes", "labels"}, HostOnly: true,
		InputLayouts: []string{"HWC", "HW"}, InputDoc: "e.g. from a decoder; HW: one channel, as DALI accepts it",
		Args: []engine.ArgSpec{
			{Name: "num_attempts", Type: engine.ArgInt, Default: 1, Doc: "windows tried per chosen IoU"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
		},
	})
	engine.RegisterBackend("ssd_random_crop", "cpu", func(a *engine.Args) (engine.Operator, error) {
		n := a.Int("num_attempts")
		if n < 1 {
			return nil, a.Errorf("num_attempts", "must be >= 1, got %d", n)
		}
		return &ssdCropOp{args: a, crop: Cropper{Thresholds: []float64{0, 0.1, 0.3, 0.5, 0.7, 0.9}, IoU: true,
			AspectMin: 0.5, AspectMax: 2, ScaleMin: 0.3, ScaleMax: 1, AllowNoCrop: true, Attempts: n,
			AllAboveThreshold: true, PruneThreshold: -1}}, nil
	})
}

type ssdCropOp struct {
	args *engine.Args
	crop Cropper
}

type ssdState struct {
	cropState
	x0, y0 int // the window in pixels
}

func (o *ssdCropOp) NewWorkerState() any { return &ssdState{} }

func (o *ssdCropOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := checkBoxesMeta(o.args, in[1], "boxes (input 1)"); err != nil {
		return nil, err
	}
	l := in[2]
	if l.DType.Size() == 0 || len(l.Shape) < 1 || len(l.Shape) > 2 {
		return nil, o.args.Invalidf("labels (input 2) must be [N] or [N, 1], got %s %v", l.DType, l.Shape)
	}
	lab := append([]int{-1}, l.Shape[1:]...)
	return []engine.TensorMeta{
		{DType: in[0].DType, Layout: in[0].Layout, Shape: append([]int{-1, -1}, in[0].Shape[2:]...)},
		{DType: engine.Float32, Shape: []int{-1, 4}},
		{DType: l.DType, Shape: lab},
	}, nil
}

func (o *ssdCropOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*ssdState)
	n, err := numBoxes(ws.In[1])
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if l := ws.In[2]; len(l.Shape) < 1 || l.Shape[0] != n || (len(l.Shape) == 2 && l.Shape[1] != 1) || len(l.Shape) > 2 {
		return o.args.DataErrorf(ws, "labels have shape %v; expected [%d] or [%d, 1] for %d boxes", l.Shape, n, n, n)
	}
	st.boxes = st.boxes[:0]
	d := ws.In[1].Data
	for i := 0; i < n; i++ {
		st.boxes = append(st.boxes, Box2([4]float64{float64(f32(d, 4*i)), float64(f32(d, 4*i+1)), float64(f32(d, 4*i+2)), float64(f32(d, 4*i+3))}))
	}
	st.win, st.kept = o.crop.Choose(st.boxes, ws.RNG, st.kept[:0])
	h, w, c := ws.In[0].Shape[0], ws.In[0].Shape[1], channels(ws.In[0].Shape)
	x0 := int(math.Floor(st.win.Anchor[0] * float64(w)))
	y0 := int(math.Floor(st.win.Anchor[1] * float64(h)))
	x1 := int(math.Ceil((st.win.Anchor[0] + st.win.Shape[0]) * float64(w)))
	y1 := int(math.Ceil((st.win.Anchor[1] + st.win.Shape[1]) * float64(h)))
	x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w, max(x1, x0+1)), min(h, max(y1, y0+1))
	if w == 0 || h == 0 {
		x0, y0, x1, y1 = 0, 0, w, h
	}
	st.x0, st.y0 = x0, y0
	if len(ws.In[0].Shape) == 2 {
		ws.Out[0].SetShape(y1-y0, x1-x0)
	} else {
		ws.Out[0].SetShape(y1-y0, x1-x0, c)
	}
	ws.Out[1].SetShape(len(st.kept), 4)
	ws.Out[2].SetShape(append([]int{len(st.kept)}, ws.In[2].Shape[1:]...)...)
	return nil
}

func (o *ssdCropOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*ssdState)
	in, out := ws.In[0], ws.Out[0]
	px := channels(in.Shape) * in.DType.Size()
	oh, ow := out.Shape[0], out.Shape[1]
	for y := 0; y < oh; y++ {
		src := ((st.y0+y)*in.Shape[1] + st.x0) * px
		copy(out.Data[y*ow*px:(y+1)*ow*px], in.Data[src:src+ow*px])
	}
	lab := ws.In[2]
	sz := lab.DType.Size()
	for j, idx := range st.kept {
		b := st.win.Project(st.boxes[idx]).LTRB()
		for k := 0; k < 4; k++ {
			putF32(ws.Out[1].Data, 4*j+k, float32(b[k]))
		}
		copy(ws.Out[2].Data[j*sz:(j+1)*sz], lab.Data[idx*sz:(idx+1)*sz])
	}
	return nil
}

// channels is an image's channel count: its third extent, 1 for an HW image.
func channels(shape []int) int {
	if len(shape) == 2 {
		return 1
	}
	return shape[2]
}
