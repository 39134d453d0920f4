package bbox

import (
	"math"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "bbox_rotate",
		Doc: "Moves bounding boxes (float32 [N, 4]) with an image rotated by fn.rotate, as DALI's bbox_rotate: the " +
			"box corners turn by angle (degrees, counter-clockwise on screen) about the image centre onto the " +
			"rotated canvas (rotate's own size, the size argument, or the input's with keep_size), and the new " +
			"box is their bounding box (mode=\"expand\"), shrunk back to the box's own extents (\"fixed\", sides " +
			"swapped when the aspect turns) or halfway between (\"halfway\"). Boxes are then clipped to the " +
			"canvas and dropped when less than remove_threshold of their area remains; input 1, optional INT32 " +
			"labels [N] or [N, 1], loses the same rows. Computed in float32, as DALI.",
		MinInputs: 1, MaxInputs: 2, Outputs: []string{"boxes", "labels"}, HostOnly: true,
		OutputIf: map[string]engine.OutputCond{"labels": engine.IfInputsOver(1)},
		Args: []engine.ArgSpec{
			{Name: "angle", Type: engine.ArgFloat, Required: true, TensorInput: true, Doc: "rotation angle in degrees, as given to fn.rotate; may come per sample"},
			{Name: "input_shape", Type: engine.ArgIntList, Required: true, TensorInput: true, Doc: "shape of the image the boxes belong to (e.g. image.shape()), its axes named by shape_layout; may come per sample"},
			{Name: "shape_layout", Type: engine.ArgString, Default: "HW", Doc: "names of the axes of input_shape; must contain H and W (HWC also reads as HW)"},
			{Name: "bbox_layout", Type: engine.ArgString, Default: "xyXY", Doc: "box format: xyXY (corners) or xyWH (corner and size)"},
			{Name: "bbox_normalized", Type: engine.ArgBool, Default: true, Doc: "boxes are relative to the image size ([0, 1]); false: in pixels"},
			{Name: "keep_size", Type: engine.ArgBool, Default: false, Doc: "the rotated image keeps its size (fn.rotate's keep_size); excludes size"},
			{Name: "size", Type: engine.ArgFloatList, Default: []float64{}, TensorInput: true, Doc: "the canvas (height, width) given to fn.rotate, floored; default: rotate's own (the rotated bounding box, with the input's parity)"},
			{Name: "mode", Type: engine.ArgString, Default: "expand", Doc: "expand, fixed or halfway (see above)"},
			{Name: "remove_threshold", Type: engine.ArgFloat, Default: 0.1, Doc: "drop a box when less than this fraction of its area remains on the canvas, 0 to 1 (0: keep every box)"},
		},
	})
	engine.RegisterBackend("bbox_rotate", "cpu", newBBoxRotate)
}

type rotateMode int

const (
	rotateExpand rotateMode = iota
	rotateHalfway
	rotateFixed
)

type bboxRotateOp struct {
	args         *engine.Args
	mode         rotateMode
	ltrb         bool
	normalized   bool
	keepSize     bool
	threshold    float32
	wIdx, hIdx   int
	labelsOutput bool
}

func newBBoxRotate(a *engine.Args) (engine.Operator, error) {
	o := &bboxRotateOp{args: a, normalized: a.Bool("bbox_normalized"), keepSize: a.Bool("keep_size")}
	switch m := a.String("mode"); m {
	case "expand":
	case "halfway":
		o.mode = rotateHalfway
	case "fixed":
		o.mode = rotateFixed
	default:
		return nil, a.Errorf("mode", "Unknown mode: %s. Supported modes are: expand, halfway, fixed.", m)
	}
	switch l := a.String("bbox_layout"); l {
	case "xyXY":
		o.ltrb = true
	case "xyWH":
	default:
		return nil, a.Errorf("bbox_layout", "Unknown bbox_layout: %s. Supported layouts are: xyWH, xyXY.", l)
	}
	sl := a.String("shape_layout")
	o.wIdx, o.hIdx = strings.IndexByte(sl, 'W'), strings.IndexByte(sl, 'H')
	if o.wIdx < 0 || o.hIdx < 0 {
		return nil, a.Errorf("shape_layout", "shape_layout %q does not contain 'W' and/or 'H'", sl)
	}
	t := a.Float("remove_threshold")
	if !(t >= 0 && t <= 1) {
		return nil, a.Errorf("remove_threshold", "expected a value in [0, 1], got %g", t)
	}
	o.threshold = float32(t)
	if o.keepSize && a.GivenConstant("size") {
		return nil, a.Errorf("size", "fn.bbox_rotate `keep_size` is mutually exclusive with `size` argument")
	}
	return o, nil
}

func (o *bboxRotateOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := checkBoxesMeta(o.args, in[0], "input 0 (the boxes)"); err != nil {
		return nil, err
	}
	out := []engine.TensorMeta{{DType: engine.Float32, Shape: []int{-1, 4}}}
	if len(in) > 1 {
		l := in[1]
		if l.DType != engine.Int32 {
			return nil, o.args.Invalidf("Input labels must be int32, got %s", l.DType)
		}
		sh := []int{-1}
		if len(l.Shape) == 2 {
			sh = []int{-1, 1}
		}
		out = append(out, engine.TensorMeta{DType: engine.Int32, Layout: l.Layout, Shape: sh})
	}
	return out, nil
}

type bboxRotateState struct {
	shape []int
	size  []float64
	xs    [4]float32
	ys    [4]float32
	boxes []float32 // kept boxes, 4 per box
	keep  []int     // their input rows
}

func (o *bboxRotateOp) NewWorkerState() any { return &bboxRotateState{} }

// canvas reads the image's and the canvas's (width, height) for a sample.
func (o *bboxRotateOp) canvas(ws *engine.Workspace, st *bboxRotateState, rad float32) (in, out [2]float32, err error) {
	a := o.args
	sh, err := a.IntsAt(ws, "input_shape", st.shape)
	if err != nil {
		return in, out, err
	}
	st.shape = sh
	if len(sh) <= max(o.wIdx, o.hIdx) {
		return in, out, a.ArgDataErrorf(ws, "input_shape", "`input_shape` ndim is smaller than the `shape_layout` ndim: %v for %q", sh, a.String("shape_layout"))
	}
	w, h := sh[o.wIdx], sh[o.hIdx]
	if w < 1 || h < 1 || w > 1<<24 || h > 1<<24 {
		return in, out, a.ArgDataErrorf(ws, "input_shape", "expected a width and height from 1 to 2^24, got %d x %d", w, h)
	}
	in = [2]float32{float32(w), float32(h)}
	switch {
	case o.keepSize:
		out = in
	case a.GivenConstant("size"):
		s, err := a.FloatsAt(ws, "size", st.size)
		if err != nil {
			return in, out, err
		}
		st.size = s
		if len(s) != 2 {
			return in, out, a.ArgDataErrorf(ws, "size", "`size` must be exactly two elements (HW), got %v", s)
		}
		cw, ch := math.Floor(float64(float32(s[1]))), math.Floor(float64(float32(s[0])))
		if !(cw >= 1 && ch >= 1 && cw <= 1<<24 && ch <= 1<<24) {
			return in, out, a.ArgDataErrorf(ws, "size", "expected a canvas (height, width) from 1 to 2^24, got %v", s)
		}
		out = [2]float32{float32(cw), float32(ch)}
	default:
		cw, ch := imaging.RotatedSize(w, h, float64(rad))
		out = [2]float32{float32(cw), float32(ch)}
	}
	return in, out, nil
}

func (o *bboxRotateOp) Setup(ws *engine.Workspace) error {
	a := o.args
	st := ws.State.(*bboxRotateState)
	n, err := numBoxes(ws.In[0])
	if err != nil {
		return a.DataErrorf(ws, "First input to fn.bbox_rotate should be float32 [N,4], got %s %v", ws.In[0].DType, ws.In[0].Shape)
	}
	if len(ws.In) > 1 {
		l := ws.In[1]
		if !(len(l.Shape) == 1 || (len(l.Shape) == 2 && l.Shape[1] == 1)) || l.Shape[0] != n {
			return a.DataErrorf(ws, "Label input to fn.bbox_rotate should be [N] or [N, 1] for %d boxes, got %v", n, l.Shape)
		}
	}
	deg, err := a.FloatAt(ws, "angle")
	if err != nil {
		return err
	}
	if math.IsNaN(deg) || math.IsInf(deg, 0) {
		return a.ArgDataErrorf(ws, "angle", "expected a finite angle, got %g", deg)
	}
	rad := float32(float32(deg) * (math.Pi / 180))
	inWH, outWH, err := o.canvas(ws, st, rad)
	if err != nil {
		return err
	}
	st.boxes, st.keep = st.boxes[:0], st.keep[:0]
	src := ws.In[0].Data
	for i := 0; i < n; i++ {
		b := [4]float32{f32(src, 4*i), f32(src, 4*i+1), f32(src, 4*i+2), f32(src, 4*i+3)}
		if r, ok := o.rotateBox(b, rad, inWH, outWH); ok {
			st.boxes = append(st.boxes, r[:]...)
			st.keep = append(st.keep, i)
		}
	}
	ws.Out[0].SetShape(len(st.keep), 4)
	if len(ws.Out) > 1 {
		if len(ws.In[1].Shape) == 2 {
			ws.Out[1].SetShape(len(st.keep), 1)
		} else {
			ws.Out[1].SetShape(len(st.keep))
		}
		ws.Out[1].Layout = ws.In[1].Layout
	}
	return nil
}

// rotateBox is one box after the rotation, clipping and (ok=false) removal; every step
// in float32, as DALI's kernel.
func (o *bboxRotateOp) rotateBox(b [4]float32, rad float32, inWH, outWH [2]float32) ([4]float32, bool) {
	if !o.ltrb {
		b[2], b[3] = b[0]+b[2], b[1]+b[3]
	}
	xs := [4]float32{b[0], b[2], b[0], b[2]}
	ys := [4]float32{b[1], b[1], b[3], b[3]}
	for k := range xs {
		if o.normalized {
			xs[k] = float32(xs[k]-0.5) * inWH[0]
			ys[k] = float32(ys[k]-0.5) * inWH[1]
		} else {
			xs[k] -= inWH[0] / 2
			ys[k] -= inWH[1] / 2
		}
	}
	oldW, oldH := xs[1]-xs[0], ys[2]-ys[0]
	c, s := float32(math.Cos(float64(rad))), float32(math.Sin(float64(rad)))
	for k := range xs {
		x, y := xs[k], ys[k]
		xs[k] = float32(x*c) + float32(y*s) + outWH[0]/2
		ys[k] = float32(-x*s) + float32(y*c) + outWH[1]/2
	}
	r := [4]float32{min(xs[0], xs[1], xs[2], xs[3]), min(ys[0], ys[1], ys[2], ys[3]),
		max(xs[0], xs[1], xs[2], xs[3]), max(ys[0], ys[1], ys[2], ys[3])}
	if o.mode != rotateExpand {
		nw, nh := r[2]-r[0], r[3]-r[1]
		dw, dh := float32(nw-oldW)*0.5, float32(nh-oldH)*0.5
		if (oldW < oldH) != (nw < nh) { // the aspect turned (45 to 135 degrees)
			dw, dh = float32(nw-oldH)*0.5, float32(nh-oldW)*0.5
		}
		if o.mode == rotateHalfway {
			dw, dh = dw*0.5, dh*0.5
		}
		r[0], r[1], r[2], r[3] = r[0]+dw, r[1]+dh, r[2]-dw, r[3]-dh
	}
	oldArea := float32(r[2]-r[0]) * float32(r[3]-r[1])
	r[0], r[2] = clampF32(r[0], outWH[0]), clampF32(r[2], outWH[0])
	r[1], r[3] = clampF32(r[1], outWH[1]), clampF32(r[3], outWH[1])
	newArea := float32(r[2]-r[0]) * float32(r[3]-r[1])
	if !(newArea/oldArea >= o.threshold) {
		return r, false
	}
	if !o.ltrb {
		r[2], r[3] = r[2]-r[0], r[3]-r[1]
	}
	if o.normalized {
		iw, ih := 1/outWH[0], 1/outWH[1]
		r[0], r[1], r[2], r[3] = r[0]*iw, r[1]*ih, r[2]*iw, r[3]*ih
	}
	return r, true
}

func clampF32(v, hi float32) float32 { return min(max(v, 0), hi) }

func (o *bboxRotateOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*bboxRotateState)
	out := ws.Out[0].Data
	for i, v := range st.boxes {
		putF32(out, i, v)
	}
	if len(ws.Out) > 1 {
		src, dst := ws.In[1].Data, ws.Out[1].Data
		for j, i := range st.keep {
			copy(dst[4*j:4*j+4], src[4*i:4*i+4])
		}
	}
	return nil
}
