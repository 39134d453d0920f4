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
			"whose side ratios are drawn from aspect_ratio, accepting the first whose overlap (threshold_type) with every box " +
			"(any box, if all_boxes_above_threshold is false) reaches the threshold and that keeps at least one box. " +
			"Boxes are 2-D ([N, 4]) or 3-D ([N, 6], bbox_layout e.g. xyzXYZ or xyzWHD; overlaps are then volumes). " +
			"Boxes whose center lies in the window (or, with bbox_prune_threshold, whose area inside it is at least " +
			"that fraction) are kept, clipped to the window and expressed relative to it. Outputs the window's " +
			"anchor and shape (x, y[, z]), e.g. for decoders.image_slice, the boxes, the labels of the kept boxes when " +
			"labels are given, and their indices with output_bbox_indices. After total_num_attempts windows " +
			"(at most 65536 when not set, so that impossible constraints cannot hang the pipeline) the best window " +
			"found is used, or the whole image when no window kept a box.",
		MinInputs: 1, MaxInputs: 2, Outputs: []string{"anchor", "shape", "bboxes", "labels", "bbox_indices"}, HostOnly: true,
		OutputIf: map[string]engine.OutputCond{"labels": engine.IfInputsOver(1), "bbox_indices": engine.IfArg("output_bbox_indices")},
		Args: []engine.ArgSpec{
			{Name: "thresholds", Type: engine.ArgFloatList, Default: []float64{0.0}, Doc: "minimum overlaps, one picked at random per attempt"},
			{Name: "threshold_type", Type: engine.ArgString, Default: "iou", Doc: "iou (intersection over union of box and window) or overlap (intersection over the box's area)"},
			{Name: "aspect_ratio", Type: engine.ArgFloatList, Default: []float64{1.0, 1.0}, Doc: "range [min, max] of the window's width/height (relative coordinates, or in input_shape's units when input_shape is given), drawn uniformly; for 3-D boxes one range for every pair of axes or six values: the x/y, x/z and y/z ranges"},
			{Name: "scaling", Type: engine.ArgFloatList, Default: []float64{1.0, 1.0}, Doc: "range [min, max] of the window's longest side relative to the image"},
			{Name: "ltrb", Type: engine.ArgBool, Default: true, Doc: "boxes are [left, top, right, bottom] (false: [x, y, width, height])"},
			{Name: "bbox_layout", Type: engine.ArgString, Doc: "a permutation of xyXY, xyWH (2-D), xyzXYZ or xyzWHD (3-D): x y z starts, X Y Z ends, W H D extents; overrides ltrb (default: xyXY / xyzXYZ by the boxes' width)"},
			{Name: "allow_no_crop", Type: engine.ArgBool, Default: true, Doc: "the whole image is one of the choices, as likely as each threshold"},
			{Name: "num_attempts", Type: engine.ArgInt, Default: 1, Doc: "windows tried per chosen threshold"},
			{Name: "total_num_attempts", Type: engine.ArgInt, Default: -1, Doc: "windows tried in all before the best one is taken (-1: until one fits, at most 65536)"},
			{Name: "all_boxes_above_threshold", Type: engine.ArgBool, Default: true, Doc: "every box must reach the threshold (false: one box suffices)"},
			{Name: "bbox_prune_threshold", Type: engine.ArgFloat, Doc: "keep boxes with at least this fraction of their area in the window (default: keep boxes whose center is in it)"},
			{Name: "output_bbox_indices", Type: engine.ArgBool, Default: false, Doc: "add an output with the indices (int32) of the kept boxes"},
			{Name: "input_shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "the image's extents, in the boxes' coordinate order (x, y[, z]), constant or per sample; alone, aspect_ratio is the ratio of the window's extents in these units; with crop_shape the windows are that fixed size and anchor and shape are output in these units"},
			{Name: "crop_shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "a fixed window size (x, y[, z]) in input_shape's units, constant or per sample (may exceed the image: the anchor is then <= 0; whole-number shapes give whole-number anchors); scaling and aspect_ratio are not used"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
		},
	})
	engine.RegisterBackend("random_bbox_crop", "cpu", newRandomBBoxCrop)
}

// maxTotalAttempts bounds the search when total_num_attempts is not set.
const maxTotalAttempts = 1 << 16

// ratioTol is the relative slack of the aspect ratio checks (rounding of ratios that
// are products of others, e.g. x/z = x/y * y/z).
const ratioTol = 1e-9

// Cropper is random_bbox_crop's window choice over boxes in relative coordinates, in
// 2-D (Dims 0 or 2) or 3-D (Dims 3).
type Cropper struct {
	Dims              int // 2 (also when 0) or 3
	Thresholds        []float64
	IoU               bool // threshold_type iou (else overlap)
	AspectMin         float64
	AspectMax         float64    // x/y range
	AspectXZ          [2]float64 // 3-D: x/z and y/z ranges (zero: AspectMin, AspectMax)
	AspectYZ          [2]float64
	ScaleMin          float64
	ScaleMax          float64
	AllowNoCrop       bool
	Attempts          int
	TotalAttempts     int // 0: maxTotalAttempts
	AllAboveThreshold bool
	PruneThreshold    float64 // < 0: prune by center
	// ByAspect draws the window's longest side from [ScaleMin, ScaleMax] and its side
	// ratios from the aspect ranges (random_bbox_crop, as DALI: a ratio range of one
	// value gives exactly that ratio); otherwise both sides are drawn from the scale
	// range and windows outside the ratio range are rejected (ssd_random_crop, 2-D).
	ByAspect bool
	// Fixed, when nonzero, is every window's extent per axis relative to the image
	// (random_bbox_crop's crop_shape over input_shape); it may exceed 1.
	Fixed [3]float64
	// Grid, when nonzero with Fixed, is the image's extent per axis in its units
	// (input_shape): fixed windows then start on whole units, as DALI draws them.
	Grid [3]float64
}

func (c *Cropper) dims() int {
	if c.Dims == 3 {
		return 3
	}
	return 2
}

// ranges are the x/y, x/z and y/z ratio ranges.
func (c *Cropper) ranges() [3][2]float64 {
	r := [3][2]float64{{c.AspectMin, c.AspectMax}, c.AspectXZ, c.AspectYZ}
	for k := 1; k < 3; k++ {
		if r[k] == [2]float64{} {
			r[k] = r[0]
		}
	}
	return r
}

// drawSides returns a window's extents and false when the draw is rejected.
func (c *Cropper) drawSides(rng *engine.RNG) (s [3]float64, ok bool) {
	if c.Fixed[0] > 0 {
		return c.Fixed, true
	}
	if !c.ByAspect {
		w := rng.Uniform(c.ScaleMin, c.ScaleMax)
		h := rng.Uniform(c.ScaleMin, c.ScaleMax)
		if h <= 0 || w <= 0 {
			return s, false
		}
		r := w / h
		return [3]float64{w, h}, r >= c.AspectMin && r <= c.AspectMax
	}
	long := rng.Uniform(c.ScaleMin, c.ScaleMax)
	if c.dims() == 2 {
		ar := rng.Uniform(c.AspectMin, c.AspectMax)
		if ar >= 1 {
			s = [3]float64{long, long / ar}
		} else {
			s = [3]float64{long * ar, long}
		}
		return s, s[0] > 0 && s[1] > 0
	}
	// 3-D: x/y from its range, then y/z from its range cut to what keeps x/z in its
	// range; the sides (x/y, 1, 1/(y/z)) are scaled so that the longest is long.
	r := c.ranges()
	xy := rng.Uniform(r[0][0], r[0][1])
	lo, hi := math.Max(r[2][0], r[1][0]/xy), math.Min(r[2][1], r[1][1]/xy)
	if lo > hi {
		if lo > hi*(1+ratioTol) {
			return s, false
		}
		lo = hi
	}
	yz := rng.Uniform(lo, hi)
	if !(xy > 0 && yz > 0) {
		return s, false
	}
	s = [3]float64{xy, 1, 1 / yz}
	m := math.Max(s[0], math.Max(s[1], s[2]))
	for d := range s {
		s[d] *= long / m
	}
	return s, s[0] > 0 && s[1] > 0 && s[2] > 0
}

// feasible reports whether the 3-D ratio ranges admit a window (x/z = x/y * y/z).
func (c *Cropper) feasible() bool {
	if c.dims() == 2 {
		return true
	}
	r := c.ranges()
	return r[0][0]*r[2][0] <= r[1][1]*(1+ratioTol) && r[0][1]*r[2][1] >= r[1][0]*(1-ratioTol)
}

// drawAnchor places a window of extent s on axis d: uniformly in [0, 1-s] (or [1-s, 0]
// when larger than the image), on whole units of Grid when set.
func (c *Cropper) drawAnchor(rng *engine.RNG, d int, s float64) float64 {
	if g := c.Grid[d]; g > 0 && c.Fixed[0] > 0 {
		room := math.Round(g - c.Fixed[d]*g)
		lo := math.Min(0, room)
		return (lo + float64(rng.Intn(int(math.Abs(room))+1))) / g
	}
	if s > 1 {
		return rng.Uniform(1-s, 0)
	}
	return rng.Uniform(0, 1-s)
}

// Window is a chosen crop, relative to the image: Anchor and Shape per axis (x, y, z).
// Drawn windows hold float32 values (what the operator outputs), and boxes are mapped
// into them with float32 arithmetic from those values, as a consumer of the outputs would.
// Fixed-size windows (crop_shape) keep float64 values: their outputs are in
// input_shape's units.
type Window struct {
	Anchor, Shape [3]float64
	NoCrop        bool
	exact         bool
}

// box is the window's extent as a Box, its end computed as the outputs give it.
func (w Window) box(dims int) Box {
	var b Box
	for d := 0; d < dims; d++ {
		b.Lo[d] = w.Anchor[d]
		if w.exact {
			b.Hi[d] = w.Anchor[d] + w.Shape[d]
		} else {
			b.Hi[d] = float64(float32(w.Anchor[d]) + float32(w.Shape[d]))
		}
	}
	return b
}

// snap rounds a drawn window to float32, keeping it inside the image when it fits.
func snap(anchor, shape [3]float64, dims int) Window {
	var w Window
	for d := 0; d < dims; d++ {
		a, s := float32(anchor[d]), float32(shape[d])
		if shape[d] <= 1 {
			if a < 0 {
				a = 0
			}
			for a > 0 && a+s > 1 {
				a = math.Nextafter32(a, 0)
			}
		}
		w.Anchor[d], w.Shape[d] = float64(a), float64(s)
	}
	return w
}

// overlap returns the threshold metric of box b and window w.
func (c *Cropper) overlap(b, w Box) float64 {
	n := c.dims()
	inter, _, ok := intersection(b, w, n)
	if !ok {
		return 0
	}
	bv := b.volume(n)
	if !c.IoU {
		if bv <= 0 {
			return 0
		}
		return inter / bv
	}
	union := bv + w.volume(n) - inter
	if union <= 0 {
		return 0
	}
	return inter / union
}

// Keeps reports whether box b survives window w's pruning.
func (c *Cropper) Keeps(b, w Box) bool {
	n := c.dims()
	if c.PruneThreshold >= 0 {
		bv := b.volume(n)
		if bv <= 0 {
			// A degenerate box is kept when it lies in the window.
			for d := 0; d < n; d++ {
				if b.Lo[d] < w.Lo[d] || b.Hi[d] > w.Hi[d] {
					return false
				}
			}
			return true
		}
		inter, touch, ok := intersection(b, w, n)
		if !ok {
			return c.PruneThreshold <= 0 && touch
		}
		return inter/bv >= c.PruneThreshold
	}
	for d := 0; d < n; d++ {
		m := (b.Lo[d] + b.Hi[d]) / 2
		if m < w.Lo[d] || m > w.Hi[d] {
			return false
		}
	}
	return true
}

// Choose picks a window for the boxes and appends the indices of the kept boxes to kept.
func (c *Cropper) Choose(boxes []Box, rng *engine.RNG, kept []int) (Window, []int) {
	n := c.dims()
	whole := Window{Shape: [3]float64{1, 1, 1}, NoCrop: true}
	if n == 2 {
		whole.Shape[2] = 0
	}
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
			s, ok := c.drawSides(rng)
			if !ok {
				continue
			}
			var anchor [3]float64
			for d := 0; d < n; d++ {
				anchor[d] = c.drawAnchor(rng, d, s[d])
			}
			cand := Window{Anchor: anchor, Shape: s, exact: true}
			if c.Fixed[0] == 0 {
				cand = snap(anchor, s, n)
			}
			win := cand.box(n)
			score, ok := c.score(boxes, win, thr)
			if len(boxes) > 0 && !c.keepsAny(boxes, win) {
				continue
			}
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
	return best, c.appendKept(boxes, best.box(n), kept)
}

// score is the window's overlap figure (the smallest over the boxes, or the largest
// when one box suffices) and whether it reaches thr.
func (c *Cropper) score(boxes []Box, win Box, thr float64) (float64, bool) {
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

func (c *Cropper) keepsAny(boxes []Box, win Box) bool {
	for _, b := range boxes {
		if c.Keeps(b, win) {
			return true
		}
	}
	return false
}

func (c *Cropper) appendKept(boxes []Box, win Box, kept []int) []int {
	for i, b := range boxes {
		if c.Keeps(b, win) {
			kept = append(kept, i)
		}
	}
	return kept
}

// Project clips box b to the window and expresses it relative to it, in float32
// arithmetic over the window's float32 anchor and end (see Window).
func (w Window) Project(b Box) Box {
	if w.NoCrop {
		return b
	}
	clip := func(v, lo, hi float32) float32 { return min(max(v, lo), hi) }
	var out Box
	for d := 0; d < 3 && w.Shape[d] != 0; d++ {
		a := float32(w.Anchor[d])
		e := a + float32(w.Shape[d])
		ext := e - a
		out.Lo[d] = float64(clip((max(a, float32(b.Lo[d]))-a)/ext, 0, 1))
		out.Hi[d] = float64(clip((min(e, float32(b.Hi[d]))-a)/ext, 0, 1))
	}
	return out
}

type randomBBoxCropOp struct {
	args    *engine.Args
	crop    Cropper
	ltrb    bool
	layout  boxLayout // the bbox_layout argument, when given
	hasLay  bool
	indices bool
}

type cropState struct {
	boxes  []Box
	kept   []int
	win    Window
	dims   int
	layout boxLayout
	units  [3]float64 // crop_shape's units per axis (input_shape); 1 without crop_shape
	grid   bool       // fixed windows start on whole units
	fixed  [3]float64 // crop_shape (0: none)
	shapes []float64  // scratch for input_shape / crop_shape
	cshape []float64
}

// rangeArg reads a [min, max] argument (one value: both) with 0 < min <= max.
func rangeArg(a *engine.Args, name string) ([2]float64, error) {
	v, ok := engine.Pair(a.Floats(name))
	if !ok || !validRange(v) {
		return [2]float64{}, a.Errorf(name, "expected [min, max] with 0 < min <= max, got %v", a.Floats(name))
	}
	return v, nil
}

func validRange(v [2]float64) bool {
	return v[0] <= v[1] && v[0] > 0 && !math.IsInf(v[1], 0) && !math.IsNaN(v[0]) && !math.IsNaN(v[1])
}

// aspectArg reads aspect_ratio: one range (every pair of axes) or, for 3-D boxes, the
// x/y, x/z and y/z ranges.
func aspectArg(a *engine.Args, c *Cropper) error {
	v := a.Floats("aspect_ratio")
	bad := func() error {
		return a.Errorf("aspect_ratio", "expected [min, max] (or, for 3-D boxes, [min_xy, max_xy, min_xz, max_xz, min_yz, max_yz]) "+
			"with 0 < min <= max, got %v", v)
	}
	switch len(v) {
	case 1, 2:
		r, _ := engine.Pair(v)
		if !validRange(r) {
			return bad()
		}
		c.AspectMin, c.AspectMax = r[0], r[1]
	case 6:
		for k := 0; k < 3; k++ {
			if !validRange([2]float64{v[2*k], v[2*k+1]}) {
				return bad()
			}
		}
		c.AspectMin, c.AspectMax = v[0], v[1]
		c.AspectXZ, c.AspectYZ = [2]float64{v[2], v[3]}, [2]float64{v[4], v[5]}
		probe := *c
		probe.Dims = 3
		if !probe.feasible() {
			return a.Errorf("aspect_ratio", "no window has these ratios: x/z = x/y * y/z must be possible, got %v", v)
		}
	default:
		return bad()
	}
	return nil
}

func newRandomBBoxCrop(a *engine.Args) (engine.Operator, error) {
	o := &randomBBoxCropOp{args: a, indices: a.Bool("output_bbox_indices")}
	var err error
	if o.layout, o.hasLay, err = boxLayoutArg(a); err != nil {
		return nil, err
	}
	o.ltrb = a.Bool("ltrb")
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
	if err := aspectArg(a, c); err != nil {
		return nil, err
	}
	sc, err := rangeArg(a, "scaling")
	if err != nil {
		return nil, err
	}
	if sc[1] > 1 {
		return nil, a.Errorf("scaling", "the window cannot be larger than the image: expected max <= 1, got %v", a.Floats("scaling"))
	}
	c.ScaleMin, c.ScaleMax = sc[0], sc[1]
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
	if a.Given("crop_shape") && !a.Given("input_shape") {
		return nil, a.Errorf("crop_shape", "needs input_shape, the image's extents (x, y[, z]) in the same units")
	}
	c.AllAboveThreshold = a.Bool("all_boxes_above_threshold")
	c.PruneThreshold = -1
	if a.Given("bbox_prune_threshold") {
		c.PruneThreshold = a.Float("bbox_prune_threshold")
		if !(c.PruneThreshold >= 0 && c.PruneThreshold <= 1) {
			return nil, a.Errorf("bbox_prune_threshold", "must be in [0, 1], got %g", c.PruneThreshold)
		}
	}
	return o, nil
}

// dimsFor is the number of axes of boxes with ncoords coordinates (0 when unknown: -1),
// or an error when the layout or the count does not fit 2-D or 3-D boxes.
func (o *randomBBoxCropOp) dimsFor(ncoords int) (int, error) {
	if o.hasLay {
		if ncoords >= 0 && ncoords != 2*o.layout.Dims {
			return 0, o.args.Invalidf("boxes have %d coordinates; bbox_layout %q has %d", ncoords, o.layout.Label, 2*o.layout.Dims)
		}
		return o.layout.Dims, nil
	}
	switch ncoords {
	case 4, 6:
		return ncoords / 2, nil
	case -1:
		return 0, nil
	}
	return 0, o.args.Invalidf("boxes must have 4 (2-D) or 6 (3-D) coordinates, got %d", ncoords)
}

func (o *randomBBoxCropOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	b := in[0]
	if b.DType != engine.Float32 || len(b.Shape) != 2 {
		return nil, o.args.Invalidf("boxes (input 0) must be float32 of shape [N, 4] (2-D) or [N, 6] (3-D), got %s %v", b.DType, b.Shape)
	}
	dims, err := o.dimsFor(b.Shape[1])
	if err != nil {
		return nil, err
	}
	if dims == 2 && len(o.args.Floats("aspect_ratio")) == 6 {
		return nil, o.args.Errorf("aspect_ratio", "six values (x/y, x/z, y/z ranges) are for 3-D boxes; these are 2-D")
	}
	vec, coords := -1, -1
	if dims > 0 {
		vec, coords = dims, 2*dims
	}
	out := []engine.TensorMeta{
		{DType: engine.Float32, Shape: []int{vec}},
		{DType: engine.Float32, Shape: []int{vec}},
		{DType: engine.Float32, Shape: []int{-1, coords}},
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

// sampleCropper is the operator's Cropper for one sample: its dimensionality, and
// input_shape / crop_shape (constant or per sample) applied.
func (o *randomBBoxCropOp) sampleCropper(ws *engine.Workspace, st *cropState, dims int) (Cropper, error) {
	c := o.crop
	c.Dims = dims
	st.units, st.fixed, st.grid = [3]float64{1, 1, 1}, [3]float64{}, false
	if !o.args.Given("input_shape") {
		return c, nil
	}
	var err error
	if st.shapes, err = o.args.FloatsAt(ws, "input_shape", st.shapes); err != nil {
		return c, err
	}
	in := st.shapes
	if len(in) != dims {
		return c, o.args.ArgDataErrorf(ws, "input_shape", "expected the image's %d extents (x, y[, z]) for %d-D boxes, got %v", dims, dims, in)
	}
	for d := 0; d < dims; d++ {
		if !(in[d] > 0) || math.IsInf(in[d], 0) {
			return c, o.args.ArgDataErrorf(ws, "input_shape", "extents must be > 0, got %v", in)
		}
	}
	if o.args.Given("crop_shape") {
		if st.cshape, err = o.args.FloatsAt(ws, "crop_shape", st.cshape); err != nil {
			return c, err
		}
		cs := st.cshape
		if len(cs) != dims {
			return c, o.args.ArgDataErrorf(ws, "crop_shape", "expected %d extents (x, y[, z]), got %v", dims, cs)
		}
		for d := 0; d < dims; d++ {
			if !(cs[d] > 0) || math.IsInf(cs[d], 0) {
				return c, o.args.ArgDataErrorf(ws, "crop_shape", "extents must be > 0, got %v", cs)
			}
			c.Fixed[d], c.Grid[d] = cs[d]/in[d], in[d]
			st.units[d], st.fixed[d] = in[d], cs[d]
		}
		for d := 0; d < dims; d++ {
			// Anchors on whole units only when both extents are whole numbers.
			if cs[d] != math.Trunc(cs[d]) || in[d] != math.Trunc(in[d]) || in[d] > 1<<30 || cs[d] > 1<<30 {
				c.Grid = [3]float64{}
			}
		}
		st.grid = c.Grid[0] > 0
		return c, nil
	}
	// input_shape alone: aspect_ratio is the ratio of the window's extents in these
	// units, i.e. (rel_i*in_i)/(rel_j*in_j); the cropper works on relative extents.
	r := c.ranges()
	pair := [3][2]int{{0, 1}, {0, 2}, {1, 2}}
	for k := 0; k < 3 && (k == 0 || dims == 3); k++ {
		f := in[pair[k][1]] / in[pair[k][0]]
		r[k][0], r[k][1] = r[k][0]*f, r[k][1]*f
	}
	c.AspectMin, c.AspectMax, c.AspectXZ, c.AspectYZ = r[0][0], r[0][1], r[1], r[2]
	return c, nil
}

func (o *randomBBoxCropOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*cropState)
	t := ws.In[0]
	if len(t.Shape) != 2 || t.DType != engine.Float32 {
		return o.args.DataErrorf(ws, "boxes must be float32 [N, 4] (2-D) or [N, 6] (3-D), got %s %v", t.DType, t.Shape)
	}
	dims, err := o.dimsFor(t.Shape[1])
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	n := t.Shape[0]
	st.dims = dims
	st.layout = o.layout
	if !o.hasLay {
		st.layout = defaultBoxLayout(dims, o.ltrb)
	}
	if len(ws.In) > 1 {
		l := ws.In[1]
		if len(l.Shape) < 1 || l.Shape[0] != n || (len(l.Shape) == 2 && l.Shape[1] != 1) || len(l.Shape) > 2 {
			return o.args.DataErrorf(ws, "labels have shape %v; expected [%d] or [%d, 1] for %d boxes", l.Shape, n, n, n)
		}
	}
	c, err := o.sampleCropper(ws, st, dims)
	if err != nil {
		return err
	}
	st.boxes = st.boxes[:0]
	nc := 2 * dims
	var coords [6]float64
	for i := 0; i < n; i++ {
		for k := 0; k < nc; k++ {
			coords[k] = float64(f32(t.Data, nc*i+k))
		}
		st.boxes = append(st.boxes, st.layout.read(coords[:nc]))
	}
	st.win, st.kept = c.Choose(st.boxes, ws.RNG, st.kept[:0])
	m := len(st.kept)
	ws.Out[0].SetShape(dims)
	ws.Out[1].SetShape(dims)
	ws.Out[2].SetShape(m, nc)
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
	for i := 0; i < st.dims; i++ {
		anchor, shape := st.win.Anchor[i], st.win.Shape[i]
		if st.fixed[0] > 0 {
			// Whole units of input_shape; the window's extent is exactly crop_shape.
			anchor *= st.units[i]
			if st.grid {
				anchor = math.Round(anchor)
			}
			shape *= st.units[i]
			if !st.win.NoCrop {
				shape = st.fixed[i]
			}
		}
		putF32(ws.Out[0].Data, i, float32(anchor))
		putF32(ws.Out[1].Data, i, float32(shape))
	}
	out := ws.Out[2].Data
	nc := 2 * st.dims
	var coords [6]float64
	for j, idx := range st.kept {
		st.layout.write(st.win.Project(st.boxes[idx]), coords[:nc])
		for c := 0; c < nc; c++ {
			putF32(out, nc*j+c, float32(coords[c]))
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
