package bbox

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "random_bbox_crop",
		Doc: "Chooses a random crop window of the image (relative coordinates) that keeps the bounding boxes " +
			"consistent, as SSD's sampling does: each attempt picks one of thresholds (or, with allow_no_crop, " +
			"the whole image) and then up to num_attempts windows whose longer side is drawn from scaling and " +
			"whose width/height ratio is drawn from aspect_ratio, accepting the first whose overlap (threshold_type) with every box " +
			"(any box, if all_boxes_above_threshold is false) reaches the threshold and that keeps at least one box. " +
			"Boxes whose center lies in the window (or, with bbox_prune_threshold, whose area inside it is at least " +
			"that fraction) are kept, clipped to the window and expressed relative to it. Outputs the window's " +
			"anchor and shape (x, y), e.g. for decoders.image_slice, the boxes, the labels of the kept boxes when " +
			"labels are given, and their indices with output_bbox_indices. After total_num_attempts windows " +
			"(at most 65536 when not set, so that impossible constraints cannot hang the pipeline) the best window " +
			"found is used, or the whole image when no window kept a box.",
		MinInputs: 1, MaxInputs: 2, Outputs: []string{"anchor", "shape", "bboxes", "labels", "bbox_indices"}, HostOnly: true,
		OutputIf: map[string]string{"labels": "inputs>1", "bbox_indices": "output_bbox_indices"},
		Args: []engine.ArgSpec{
			{Name: "thresholds", Type: engine.ArgFloatList, Default: []float64{0.0}, Doc: "minimum overlaps, one picked at random per attempt"},
			{Name: "threshold_type", Type: engine.ArgString, Default: "iou", Doc: "iou (intersection over union of box and window) or overlap (intersection over the box's area)"},
			{Name: "aspect_ratio", Type: engine.ArgFloatList, Default: []float64{1.0, 1.0}, Doc: "range [min, max] of the window's width/height (relative coordinates), drawn uniformly"},
			{Name: "scaling", Type: engine.ArgFloatList, Default: []float64{1.0, 1.0}, Doc: "range [min, max] of the window's longer side relative to the image"},
			{Name: "ltrb", Type: engine.ArgBool, Default: true, Doc: "boxes are [left, top, right, bottom] (false: [x, y, width, height])"},
			{Name: "bbox_layout", Type: engine.ArgString, Doc: "xyXY or xyWH; overrides ltrb"},
			{Name: "allow_no_crop", Type: engine.ArgBool, Default: true, Doc: "the whole image is one of the choices, as likely as each threshold"},
			{Name: "num_attempts", Type: engine.ArgInt, Default: 1, Doc: "windows tried per chosen threshold"},
			{Name: "total_num_attempts", Type: engine.ArgInt, Default: -1, Doc: "windows tried in all before the best one is taken (-1: until one fits, at most 65536)"},
			{Name: "all_boxes_above_threshold", Type: engine.ArgBool, Default: true, Doc: "every box must reach the threshold (false: one box suffices)"},
			{Name: "bbox_prune_threshold", Type: engine.ArgFloat, Doc: "keep boxes with at least this fraction of their area in the window (default: keep boxes whose center is in it)"},
			{Name: "output_bbox_indices", Type: engine.ArgBool, Default: false, Doc: "add an output with the indices (int32) of the kept boxes"},
			{Name: "input_shape", Type: engine.ArgFloatList, Doc: "the image's extents, in the boxes' coordinate order (x, y); with crop_shape the windows are that fixed size and anchor and shape are output in these units"},
			{Name: "crop_shape", Type: engine.ArgFloatList, Doc: "a fixed window size (x, y) in input_shape's units (may exceed the image: the anchor is then <= 0); scaling and aspect_ratio are not used"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
		},
	})
	engine.RegisterBackend("random_bbox_crop", "cpu", newRandomBBoxCrop)
}

// maxTotalAttempts bounds the search when total_num_attempts is not set.
const maxTotalAttempts = 1 << 16

// Cropper is random_bbox_crop's window choice over boxes in [l, t, r, b] relative
// coordinates.
type Cropper struct {
	Thresholds        []float64
	IoU               bool // threshold_type iou (else overlap)
	AspectMin         float64
	AspectMax         float64
	ScaleMin          float64
	ScaleMax          float64
	AllowNoCrop       bool
	Attempts          int
	TotalAttempts     int // 0: maxTotalAttempts
	AllAboveThreshold bool
	PruneThreshold    float64 // < 0: prune by center
	// ByAspect draws the window's longer side from [ScaleMin, ScaleMax] and its
	// width/height from [AspectMin, AspectMax] (random_bbox_crop, as DALI: a ratio range
	// of one value gives exactly that ratio); otherwise both sides are drawn from the
	// scale range and windows outside the ratio range are rejected (ssd_random_crop).
	ByAspect bool
	// Fixed, when nonzero, is every window's (width, height) relative to the image
	// (random_bbox_crop's crop_shape over input_shape); it may exceed 1.
	Fixed [2]float64
}

// drawSides returns a window's width and height, and false when the draw is rejected.
func (c *Cropper) drawSides(rng *engine.RNG) (w, h float64, ok bool) {
	if c.Fixed[0] > 0 {
		return c.Fixed[0], c.Fixed[1], true
	}
	if c.ByAspect {
		s := rng.Uniform(c.ScaleMin, c.ScaleMax)
		ar := rng.Uniform(c.AspectMin, c.AspectMax)
		if ar >= 1 {
			w, h = s, s/ar
		} else {
			w, h = s*ar, s
		}
		return w, h, w > 0 && h > 0
	}
	w = rng.Uniform(c.ScaleMin, c.ScaleMax)
	h = rng.Uniform(c.ScaleMin, c.ScaleMax)
	if h <= 0 || w <= 0 {
		return w, h, false
	}
	r := w / h
	return w, h, r >= c.AspectMin && r <= c.AspectMax
}

// Window is a chosen crop: Anchor and Shape as (x, y), relative to the image.
type Window struct {
	Anchor, Shape [2]float64
	NoCrop        bool
}

// overlap returns the threshold metric of box b ([l, t, r, b]) and window w.
func (c *Cropper) overlap(b [4]float64, w [4]float64) float64 {
	iw := math.Min(b[2], w[2]) - math.Max(b[0], w[0])
	ih := math.Min(b[3], w[3]) - math.Max(b[1], w[1])
	if iw <= 0 || ih <= 0 {
		return 0
	}
	inter := iw * ih
	barea := (b[2] - b[0]) * (b[3] - b[1])
	if !c.IoU {
		if barea <= 0 {
			return 0
		}
		return inter / barea
	}
	union := barea + (w[2]-w[0])*(w[3]-w[1]) - inter
	if union <= 0 {
		return 0
	}
	return inter / union
}

// Keeps reports whether box b survives window w's pruning.
func (c *Cropper) Keeps(b [4]float64, w [4]float64) bool {
	if c.PruneThreshold >= 0 {
		barea := (b[2] - b[0]) * (b[3] - b[1])
		iw := math.Min(b[2], w[2]) - math.Max(b[0], w[0])
		ih := math.Min(b[3], w[3]) - math.Max(b[1], w[1])
		if barea <= 0 {
			// A degenerate box is kept when it lies in the window.
			return b[0] >= w[0] && b[2] <= w[2] && b[1] >= w[1] && b[3] <= w[3]
		}
		if iw <= 0 || ih <= 0 {
			return c.PruneThreshold <= 0 && iw >= 0 && ih >= 0
		}
		return iw*ih/barea >= c.PruneThreshold
	}
	cx, cy := (b[0]+b[2])/2, (b[1]+b[3])/2
	return cx >= w[0] && cx <= w[2] && cy >= w[1] && cy <= w[3]
}

// Choose picks a window for the boxes and appends the indices of the kept boxes to kept.
func (c *Cropper) Choose(boxes [][4]float64, rng *engine.RNG, kept []int) (Window, []int) {
	whole := Window{Shape: [2]float64{1, 1}, NoCrop: true}
	keepAll := func() []int {
		for i := range boxes {
			kept = append(kept, i)
		}
		return kept
	}
	total := c.TotalAttempts
	if total <= 0 {
		total = maxTotalAttempts
	}
	options := len(c.Thresholds)
	if c.AllowNoCrop {
		options++
	}
	best, bestScore := Window{}, math.Inf(-1)
	tried := 0
	for tried < total {
		opt := rng.Intn(options)
		if opt >= len(c.Thresholds) {
			return whole, keepAll()
		}
		thr := c.Thresholds[opt]
		for a := 0; a < c.Attempts && tried < total; a++ {
			tried++
			w, h, ok := c.drawSides(rng)
			if !ok {
				continue
			}
			x := rng.Uniform(0, 1-w)
			y := rng.Uniform(0, 1-h)
			win := [4]float64{x, y, x + w, y + h}
			score, ok := c.score(boxes, win, thr)
			if len(boxes) > 0 && !c.keepsAny(boxes, win) {
				continue
			}
			cand := Window{Anchor: [2]float64{x, y}, Shape: [2]float64{w, h}}
			if ok {
				return cand, c.appendKept(boxes, win, kept)
			}
			if score > bestScore {
				best, bestScore = cand, score
			}
		}
	}
	if math.IsInf(bestScore, -1) {
		return whole, keepAll()
	}
	win := [4]float64{best.Anchor[0], best.Anchor[1], best.Anchor[0] + best.Shape[0], best.Anchor[1] + best.Shape[1]}
	return best, c.appendKept(boxes, win, kept)
}

// score is the window's overlap figure (the smallest over the boxes, or the largest
// when one box suffices) and whether it reaches thr.
func (c *Cropper) score(boxes [][4]float64, win [4]float64, thr float64) (float64, bool) {
	if len(boxes) == 0 {
		return 0, true
	}
	s := math.Inf(1)
	if !c.AllAboveThreshold {
		s = math.Inf(-1)
	}
	for _, b := range boxes {
		m := c.overlap(b, win)
		if c.AllAboveThreshold {
			s = math.Min(s, m)
		} else {
			s = math.Max(s, m)
		}
	}
	return s, s >= thr
}

func (c *Cropper) keepsAny(boxes [][4]float64, win [4]float64) bool {
	for _, b := range boxes {
		if c.Keeps(b, win) {
			return true
		}
	}
	return false
}

func (c *Cropper) appendKept(boxes [][4]float64, win [4]float64, kept []int) []int {
	for i, b := range boxes {
		if c.Keeps(b, win) {
			kept = append(kept, i)
		}
	}
	return kept
}

// Project clips box b ([l, t, r, b]) to the window and expresses it relative to it.
func (w Window) Project(b [4]float64) [4]float64 {
	if w.NoCrop {
		return b
	}
	x0, y0, x1, y1 := w.Anchor[0], w.Anchor[1], w.Anchor[0]+w.Shape[0], w.Anchor[1]+w.Shape[1]
	clip := func(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }
	// The outer clip keeps rounding from leaving [0, 1].
	return [4]float64{
		clip((clip(b[0], x0, x1)-x0)/w.Shape[0], 0, 1),
		clip((clip(b[1], y0, y1)-y0)/w.Shape[1], 0, 1),
		clip((clip(b[2], x0, x1)-x0)/w.Shape[0], 0, 1),
		clip((clip(b[3], y0, y1)-y0)/w.Shape[1], 0, 1),
	}
}

type randomBBoxCropOp struct {
	args    *engine.Args
	crop    Cropper
	ltrb    bool
	indices bool
	units   [2]float64 // input_shape with crop_shape: the outputs' units; else (1, 1)
	fixed   [2]float64 // crop_shape (0: none)
}

type cropState struct {
	boxes []([4]float64)
	kept  []int
	win   Window
}

// rangeArg reads a [min, max] argument (one value: both) with 0 < min <= max.
func rangeArg(a *engine.Args, name string) ([2]float64, error) {
	v, ok := engine.Pair(a.Floats(name))
	if !ok || v[0] > v[1] || v[0] <= 0 || math.IsInf(v[1], 0) || math.IsNaN(v[0]) || math.IsNaN(v[1]) {
		return [2]float64{}, a.Errorf(name, "expected [min, max] with 0 < min <= max, got %v", a.Floats(name))
	}
	return v, nil
}

func newRandomBBoxCrop(a *engine.Args) (engine.Operator, error) {
	o := &randomBBoxCropOp{args: a, indices: a.Bool("output_bbox_indices")}
	var err error
	if o.ltrb, err = layoutLTRB(a); err != nil {
		return nil, err
	}
	c := &o.crop
	c.Thresholds = a.Floats("thresholds")
	if len(c.Thresholds) == 0 {
		return nil, a.Errorf("thresholds", "must not be empty")
	}
	for _, t := range c.Thresholds {
		if !(t >= 0 && t <= 1) {
			return nil, a.Errorf("thresholds", "values must be in [0, 1], got %v", c.Thresholds)
		}
	}
	switch a.String("threshold_type") {
	case "iou":
		c.IoU = true
	case "overlap":
	default:
		return nil, a.Errorf("threshold_type", "expected iou or overlap, got %q", a.String("threshold_type"))
	}
	ar, err := rangeArg(a, "aspect_ratio")
	if err != nil {
		return nil, err
	}
	sc, err := rangeArg(a, "scaling")
	if err != nil {
		return nil, err
	}
	if sc[1] > 1 {
		return nil, a.Errorf("scaling", "the window cannot be larger than the image: expected max <= 1, got %v", a.Floats("scaling"))
	}
	c.AspectMin, c.AspectMax, c.ScaleMin, c.ScaleMax = ar[0], ar[1], sc[0], sc[1]
	c.ByAspect = true
	c.AllowNoCrop = a.Bool("allow_no_crop")
	c.Attempts = a.Int("num_attempts")
	if c.Attempts < 1 {
		return nil, a.Errorf("num_attempts", "must be >= 1, got %d", c.Attempts)
	}
	c.TotalAttempts = a.Int("total_num_attempts")
	if c.TotalAttempts == 0 || c.TotalAttempts < -1 {
		return nil, a.Errorf("total_num_attempts", "must be -1 (no limit) or >= 1, got %d", c.TotalAttempts)
	}
	if c.TotalAttempts < 0 {
		c.TotalAttempts = 0
	}
	o.units = [2]float64{1, 1}
	if a.Has("crop_shape") {
		in, cs := a.Floats("input_shape"), a.Floats("crop_shape")
		if len(in) != 2 {
			return nil, a.Errorf("input_shape", "crop_shape needs input_shape, the image's 2 extents (x, y); got %v", in)
		}
		if len(cs) != 2 {
			return nil, a.Errorf("crop_shape", "expected 2 extents (x, y), got %v", cs)
		}
		for d := 0; d < 2; d++ {
			if !(in[d] > 0) || !(cs[d] > 0) || math.IsInf(in[d], 0) || math.IsInf(cs[d], 0) {
				return nil, a.Errorf("crop_shape", "input_shape %v and crop_shape %v must be > 0", in, cs)
			}
			c.Fixed[d] = cs[d] / in[d]
			o.units[d], o.fixed[d] = in[d], cs[d]
		}
	} else if a.Has("input_shape") {
		return nil, a.Errorf("input_shape", "is used with crop_shape (a fixed window size); godali does not take it alone")
	}
	c.AllAboveThreshold = a.Bool("all_boxes_above_threshold")
	c.PruneThreshold = -1
	if a.Has("bbox_prune_threshold") {
		c.PruneThreshold = a.Float("bbox_prune_threshold")
		if !(c.PruneThreshold >= 0 && c.PruneThreshold <= 1) {
			return nil, a.Errorf("bbox_prune_threshold", "must be in [0, 1], got %g", c.PruneThreshold)
		}
	}
	return o, nil
}

func (o *randomBBoxCropOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := checkBoxesMeta(o.args, in[0], "boxes (input 0)"); err != nil {
		return nil, err
	}
	out := []engine.TensorMeta{
		{DType: engine.Float32, Shape: []int{2}},
		{DType: engine.Float32, Shape: []int{2}},
		{DType: engine.Float32, Shape: []int{-1, 4}},
	}
	if len(in) > 1 {
		l := in[1]
		if l.DType.Size() == 0 || len(l.Shape) < 1 || len(l.Shape) > 2 || (len(l.Shape) == 2 && l.Shape[1] != 1 && l.Shape[1] != -1) {
			return nil, o.args.Invalidf("labels (input 1) must be [N] or [N, 1], got %s %v", l.DType, l.Shape)
		}
		shape := append([]int{-1}, l.Shape[1:]...)
		if len(shape) == 2 {
			shape[1] = 1
		}
		out = append(out, engine.TensorMeta{DType: l.DType, Shape: shape})
	}
	if o.indices {
		out = append(out, engine.TensorMeta{DType: engine.Int32, Shape: []int{-1}})
	}
	return out, nil
}

func (o *randomBBoxCropOp) NewWorkerState() any { return &cropState{} }

func (o *randomBBoxCropOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*cropState)
	n, err := numBoxes(ws.In[0])
	if err != nil {
		return err
	}
	if len(ws.In) > 1 {
		l := ws.In[1]
		if len(l.Shape) < 1 || l.Shape[0] != n || (len(l.Shape) == 2 && l.Shape[1] != 1) || len(l.Shape) > 2 {
			return engine.Errorf(engine.StatusData, "labels have shape %v; expected [%d] or [%d, 1] for %d boxes", l.Shape, n, n, n)
		}
	}
	st.boxes = st.boxes[:0]
	data := ws.In[0].Data
	for i := 0; i < n; i++ {
		b := [4]float64{float64(f32(data, 4*i)), float64(f32(data, 4*i+1)), float64(f32(data, 4*i+2)), float64(f32(data, 4*i+3))}
		if !o.ltrb {
			b[2] += b[0]
			b[3] += b[1]
		}
		st.boxes = append(st.boxes, b)
	}
	st.win, st.kept = o.crop.Choose(st.boxes, ws.RNG, st.kept[:0])
	m := len(st.kept)
	ws.Out[0].SetShape(2)
	ws.Out[1].SetShape(2)
	ws.Out[2].SetShape(m, 4)
	k := 3
	if len(ws.In) > 1 {
		if k < len(ws.Out) {
			ws.Out[k].SetShape(append([]int{m}, ws.In[1].Shape[1:]...)...)
		}
		k++
	}
	if o.indices && k < len(ws.Out) {
		ws.Out[k].SetShape(m)
	}
	return nil
}

func (o *randomBBoxCropOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*cropState)
	for i := 0; i < 2; i++ {
		putF32(ws.Out[0].Data, i, float32(st.win.Anchor[i]*o.units[i]))
		shape := st.win.Shape[i] * o.units[i]
		if o.fixed[0] > 0 && !st.win.NoCrop {
			shape = o.fixed[i] // exactly crop_shape
		}
		putF32(ws.Out[1].Data, i, float32(shape))
	}
	out := ws.Out[2].Data
	for j, idx := range st.kept {
		b := st.win.Project(st.boxes[idx])
		if !o.ltrb {
			b[2] -= b[0]
			b[3] -= b[1]
		}
		for c := 0; c < 4; c++ {
			putF32(out, 4*j+c, float32(b[c]))
		}
	}
	k := 3
	if len(ws.In) > 1 {
		if k < len(ws.Out) {
			lab := ws.In[1]
			sz := lab.DType.Size()
			dst := ws.Out[k].Data
			for j, idx := range st.kept {
				copy(dst[j*sz:(j+1)*sz], lab.Data[idx*sz:(idx+1)*sz])
			}
		}
		k++
	}
	if o.indices && k < len(ws.Out) {
		for j, idx := range st.kept {
			engine.WriteScalar(ws.Out[k].Data[4*j:], engine.Int32, float64(idx))
		}
	}
	return nil
}
