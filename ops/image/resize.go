package image

import (
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

var interpDoc = "INTERP_NN, INTERP_LINEAR, INTERP_CUBIC, INTERP_TRIANGULAR or INTERP_LANCZOS3"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "resize",
		Doc: "Resizes HWC uint8 images. Output size from resize_x/resize_y, size, resize_shorter or " +
			"resize_longer with mode (default, stretch, not_smaller, not_larger) and max_size, as in DALI. " +
			"Linear and triangular filters with antialias agree with PIL's BILINEAR.",
		Sequences: engine.PerFrame,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "resize_x", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "output width (0: from the aspect ratio)"},
			{Name: "resize_y", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "output height (0: from the aspect ratio)"},
			{Name: "size", Type: engine.ArgFloatList, TensorInput: true, Doc: "output size (height, width); a scalar applies to both; 0 = absent"},
			{Name: "resize_shorter", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "length of the shorter side, keeping the aspect ratio"},
			{Name: "resize_longer", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "length of the longer side, keeping the aspect ratio"},
			{Name: "mode", Type: engine.ArgString, Default: "default", Doc: "default, stretch, not_smaller or not_larger"},
			{Name: "max_size", Type: engine.ArgFloatList, Doc: "limit of the output size (height, width); a scalar applies to both"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: interpDoc},
			{Name: "min_filter", Type: engine.ArgInterpType, Doc: "filter when downscaling (default: interp_type)"},
			{Name: "mag_filter", Type: engine.ArgInterpType, Doc: "filter when upscaling (default: interp_type)"},
			{Name: "antialias", Type: engine.ArgBool, Default: true, Doc: "widen the filter when downscaling"},
			{Name: "roi_start", Type: engine.ArgFloatList, TensorInput: true, Doc: "start of the input region (y, x)"},
			{Name: "roi_end", Type: engine.ArgFloatList, TensorInput: true, Doc: "end of the input region (y, x)"},
			{Name: "roi_relative", Type: engine.ArgBool, Default: false, Doc: "roi_start/roi_end are fractions of the input size"},
			{Name: "dtype", Type: engine.ArgDType, Default: "UINT8", Doc: "output type (only UINT8)"},
			{Name: "subpixel_scale", Type: engine.ArgBool, Default: true, Doc: "as DALI: when the output size computed (or given) is fractional, the input region is widened or narrowed about its centre so that the scale stays input / fractional size (false: the scale follows the rounded size); no effect with size_rounding=\"truncate\""},
			{Name: "size_rounding", Type: engine.ArgString, Default: "round", Doc: "godali only: \"round\" (DALI) rounds the computed extents; \"truncate\" (with resize_shorter) follows torchvision's Resize(int): the shorter side is resize_shorter, the longer int(resize_shorter * long / short), and when that exceeds max_size, the longer is max_size and the shorter int(max_size * shorter / longer)"},
		},
	})
	engine.RegisterBackend("resize", "cpu", func(a *engine.Args) (engine.Operator, error) { return newResize(a) })
}

// ResizeSpec computes output sizes the way DALI's resize does.
type ResizeSpec struct {
	W, H        float64 // requested extents, 0 = absent
	Shorter     float64
	Longer      float64
	Mode        string
	MaxW, MaxH  float64
	Min, Mag    imaging.Interp
	Antialias   bool
	ROIStart    []float64 // y, x
	ROIEnd      []float64
	ROIRelative bool
	Truncate    bool // torchvision's Resize(int) rule (with Shorter)
	Subpixel    bool // DALI's subpixel_scale: keep the fractional size's scale
}

func parseResizeSpec(a *engine.Args) (*ResizeSpec, error) {
	s := &ResizeSpec{W: a.Float("resize_x"), H: a.Float("resize_y"), Shorter: a.Float("resize_shorter"),
		Longer: a.Float("resize_longer"), Mode: a.String("mode"), Antialias: a.Bool("antialias"),
		Subpixel: a.Bool("subpixel_scale"),
		ROIStart: a.Floats("roi_start"), ROIEnd: a.Floats("roi_end"), ROIRelative: a.Bool("roi_relative")}
	// Arguments in pixels (or fractions of the input, with roi_relative). max_size is a
	// limit: a huge one never applies and is harmless.
	if err := a.CheckExtentArgs("resize_x", "resize_y", "size", "resize_shorter", "resize_longer", "roi_start", "roi_end"); err != nil {
		return nil, err
	}
	if a.GivenConstant("size") {
		if a.GivenConstant("resize_x") || a.GivenConstant("resize_y") {
			return nil, a.Errorf("size", "give size or resize_x/resize_y, not both")
		}
		sz, err := a.FloatPair("size")
		if err != nil {
			return nil, err
		}
		s.H, s.W = sz[0], sz[1]
	}
	switch a.String("size_rounding") {
	case "round":
	case "truncate":
		if !(a.Float("resize_shorter") > 0) {
			return nil, a.Errorf("size_rounding", "\"truncate\" goes with resize_shorter")
		}
		if ms := a.Floats("max_size"); len(ms) == 2 && ms[0] != ms[1] {
			return nil, a.Errorf("size_rounding", "\"truncate\" takes one max_size for the longer side, got %v", ms)
		}
		s.Truncate = true
	default:
		return nil, a.Errorf("size_rounding", "expected \"round\" or \"truncate\", got %q", a.String("size_rounding"))
	}
	given := 0
	if s.W > 0 || s.H > 0 || a.AnyPerSample("resize_x", "resize_y", "size") {
		given++
	}
	if s.Shorter > 0 || a.AnyPerSample("resize_shorter") {
		given++
	}
	if s.Longer > 0 || a.AnyPerSample("resize_longer") {
		given++
	}
	if given != 1 {
		return nil, a.Errorf("resize_x", "give exactly one of resize_x/resize_y, size, resize_shorter, resize_longer")
	}
	// DALI: mode applies to resize_x/resize_y and size only.
	if a.Given("mode") && (s.Shorter > 0 || s.Longer > 0 || a.AnyPerSample("resize_shorter", "resize_longer")) {
		return nil, a.Errorf("mode", "`resize_shorter`, `resize_longer` and `mode` arguments are mutually exclusive")
	}
	if s.W < 0 || s.H < 0 || s.Shorter < 0 || s.Longer < 0 {
		return nil, a.Errorf("size", "sizes must be >= 0")
	}
	switch s.Mode {
	case "default", "stretch", "not_smaller", "not_larger":
	default:
		return nil, a.Errorf("mode", "unknown mode %q; valid: default, stretch, not_smaller, not_larger", s.Mode)
	}
	if a.Given("max_size") {
		ms, err := a.FloatPair("max_size")
		if err != nil {
			return nil, err
		}
		s.MaxH, s.MaxW = ms[0], ms[1]
	}
	interp, _ := imaging.ParseInterp(a.String("interp_type"))
	s.Min, s.Mag = interp, interp
	if a.Given("min_filter") {
		s.Min, _ = imaging.ParseInterp(a.String("min_filter"))
	}
	if a.Given("mag_filter") {
		s.Mag, _ = imaging.ParseInterp(a.String("mag_filter"))
	}
	if a.Given("roi_start") != a.Given("roi_end") || (s.ROIStart != nil && len(s.ROIStart) != 2) || (s.ROIEnd != nil && len(s.ROIEnd) != 2) {
		return nil, a.Errorf("roi_start", "roi_start and roi_end go together, each as (y, x)")
	}
	if a.Given("size") && (a.Given("resize_x") || a.Given("resize_y")) {
		return nil, a.Errorf("size", "give size or resize_x/resize_y, not both")
	}
	return s, nil
}

// resizeSizeArgs are the arguments DALI accepts per sample (TensorList) in resize.
var resizeSizeArgs = []string{"resize_x", "resize_y", "size", "resize_shorter", "resize_longer", "roi_start", "roi_end"}

// specAt returns the spec of the workspace's sample: the constant spec, or, when sizes
// come from pipeline values, a copy in buf with this sample's values, checked.
func (r *resizeOp) specAt(ws *engine.Workspace, buf *ResizeSpec) (*ResizeSpec, error) {
	if !r.dynamic {
		return r.spec, nil
	}
	a := r.args
	*buf = *r.spec
	s := buf
	for _, p := range []struct {
		name string
		dst  *float64
	}{{"resize_x", &s.W}, {"resize_y", &s.H}, {"resize_shorter", &s.Shorter}, {"resize_longer", &s.Longer}} {
		if a.AnyPerSample(p.name) {
			v, err := a.FloatAt(ws, p.name)
			if err == nil {
				err = a.CheckExtents(ws, p.name, v)
			}
			if err != nil {
				return nil, err
			}
			*p.dst = v
		}
	}
	if a.AnyPerSample("size") {
		sz, err := a.FloatPairAt(ws, "size")
		if err == nil {
			err = a.CheckExtents(ws, "size", sz[:]...)
		}
		if err != nil {
			return nil, err
		}
		s.H, s.W = sz[0], sz[1]
	}
	for _, p := range []struct {
		name string
		dst  *[]float64
	}{{"roi_start", &s.ROIStart}, {"roi_end", &s.ROIEnd}} {
		if a.AnyPerSample(p.name) {
			v, err := a.FloatsAt(ws, p.name, nil)
			if err == nil {
				err = a.CheckExtents(ws, p.name, v...)
			}
			if err != nil {
				return nil, err
			}
			if len(v) != 2 {
				return nil, a.ArgDataErrorf(ws, p.name, "expected (y, x), got %v", v)
			}
			*p.dst = v
		}
	}
	for _, v := range []float64{s.W, s.H, s.Shorter, s.Longer} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, a.ArgDataErrorf(ws, "size", "sizes must be finite and >= 0, got resize_x=%g resize_y=%g resize_shorter=%g resize_longer=%g", s.W, s.H, s.Shorter, s.Longer)
		}
	}
	if s.W == 0 && s.H == 0 && s.Shorter == 0 && s.Longer == 0 {
		return nil, a.ArgDataErrorf(ws, "size", "every size is 0 (no output size)")
	}
	return s, nil
}

// ROI returns the input region (x0, y0, x1, y1) of a w x h input.
func (s *ResizeSpec) ROI(w, h int) [4]float64 {
	if s.ROIStart == nil {
		return imaging.FullROI(w, h)
	}
	y0, x0, y1, x1 := s.ROIStart[0], s.ROIStart[1], s.ROIEnd[0], s.ROIEnd[1]
	if s.ROIRelative {
		y0, y1 = y0*float64(h), y1*float64(h)
		x0, x1 = x0*float64(w), x1*float64(w)
	}
	return [4]float64{x0, y0, x1, y1}
}

// OutputSize is the output size for an input region of w x h: 0, 0 for an empty region;
// ok=false when the sizes ask for more than engine.MaxExtent pixels along a side for this
// region (a tiny region scaled to a given size).
func (s *ResizeSpec) OutputSize(w, h float64) (int, int, bool) {
	iw, ih, _, _, ok := s.outputSize(w, h)
	return iw, ih, ok
}

// outputSize is OutputSize with the fractional size it was rounded from.
func (s *ResizeSpec) outputSize(w, h float64) (int, int, float64, float64, bool) {
	w, h = math.Abs(w), math.Abs(h)
	if w == 0 || h == 0 {
		return 0, 0, 0, 0, true
	}
	if s.Truncate && s.Shorter > 0 {
		iw, ih, ok := s.truncatedSize(w, h)
		return iw, ih, float64(iw), float64(ih), ok
	}
	var ow, oh float64
	switch {
	case s.Shorter > 0:
		k := s.Shorter / math.Min(w, h)
		ow, oh = w*k, h*k
	case s.Longer > 0:
		k := s.Longer / math.Max(w, h)
		ow, oh = w*k, h*k
	default:
		switch s.Mode {
		case "stretch":
			ow, oh = s.W, s.H
			if ow == 0 {
				ow = w
			}
			if oh == 0 {
				oh = h
			}
		case "not_smaller", "not_larger":
			kx, ky := s.W/w, s.H/h
			var k float64
			switch {
			case s.W == 0:
				k = ky
			case s.H == 0:
				k = kx
			case s.Mode == "not_smaller":
				k = math.Max(kx, ky)
			default:
				k = math.Min(kx, ky)
			}
			ow, oh = w*k, h*k
		default:
			ow, oh = s.W, s.H
			if ow == 0 {
				ow = w * s.H / h
			}
			if oh == 0 {
				oh = h * s.W / w
			}
		}
	}
	if s.MaxW > 0 && ow > s.MaxW {
		oh, ow = oh*s.MaxW/ow, s.MaxW
	}
	if s.MaxH > 0 && oh > s.MaxH {
		ow, oh = ow*s.MaxH/oh, s.MaxH
	}
	iw, okW := engine.Extent(ow, math.Round)
	ih, okH := engine.Extent(oh, math.Round)
	return max(1, iw), max(1, ih), ow, oh, okW && okH
}

// subpixelROI is DALI's subpixel_scale: an output side rounded from a fractional size
// reads a region scaled by rounded / fractional about the region's centre, so that the
// scale stays region / fractional size.
func subpixelROI(roi [4]float64, iw, ih int, fw, fh float64) [4]float64 {
	adjust := func(lo, hi float64, n int, f float64) (float64, float64) {
		if f <= 0 || float64(n) == f || math.IsInf(f, 0) {
			return lo, hi
		}
		c, half := (lo+hi)/2, (hi-lo)/2*float64(n)/f
		return c - half, c + half
	}
	roi[0], roi[2] = adjust(roi[0], roi[2], iw, fw)
	roi[1], roi[3] = adjust(roi[1], roi[3], ih, fh)
	return roi
}

// truncatedSize is torchvision's _compute_resized_output_size for Resize(int, max_size).
func (s *ResizeSpec) truncatedSize(w, h float64) (int, int, bool) {
	short, long := h, w
	if w <= h {
		short, long = w, h
	}
	newShort := math.Trunc(s.Shorter)
	newLong := math.Trunc(newShort * long / short)
	if s.MaxW > 0 && newLong > s.MaxW {
		newShort, newLong = math.Trunc(s.MaxW*newShort/newLong), s.MaxW
	}
	ns, okS := engine.Extent(newShort, nil)
	nl, okL := engine.Extent(newLong, nil)
	ns, nl = max(1, ns), max(1, nl)
	if w <= h {
		return ns, nl, okS && okL
	}
	return nl, ns, okS && okL
}

// sizeArg names the argument that sets the size, for errors.
func (s *ResizeSpec) sizeArg(a *engine.Args) string {
	switch {
	case s.Shorter > 0:
		return "resize_shorter"
	case s.Longer > 0:
		return "resize_longer"
	case a.Given("size"):
		return "size"
	case s.W > 0:
		return "resize_x"
	}
	return "resize_y"
}

// sampleSize is OutputSize for the region roi of a w x h input, with the errors: an empty
// region, a size that is no usable extent (naming the argument that set it).
// With subpixel_scale (DALI's default) the region is adjusted to the fractional size.
func (s *ResizeSpec) sampleSize(a *engine.Args, ws *engine.Workspace, roi *[4]float64, w, h int) (int, int, error) {
	ow, oh, fw, fh, ok := s.outputSize(roi[2]-roi[0], roi[3]-roi[1])
	if ok && s.Subpixel && ow > 0 && oh > 0 {
		*roi = subpixelROI(*roi, ow, oh, fw, fh)
	}
	if !ok {
		return 0, 0, a.ArgDataErrorf(ws, s.sizeArg(a), "the output size for the %gx%g input region %v is more than 2^40 = %d pixels along a side",
			math.Abs(roi[2]-roi[0]), math.Abs(roi[3]-roi[1]), roi, int64(engine.MaxExtent))
	}
	if ow == 0 || oh == 0 {
		return 0, 0, a.DataErrorf(ws, "empty input region %v of a %dx%d image", roi, w, h)
	}
	return ow, oh, nil
}

// StaticSize reports the output size when it does not depend on the input.
func (s *ResizeSpec) StaticSize() (int, int, bool) {
	if s.W > 0 && s.H > 0 && (s.Mode == "default" || s.Mode == "stretch") && s.MaxW == 0 && s.MaxH == 0 {
		w, okW := engine.Extent(s.W, math.Round) // parseResizeSpec checked them
		h, okH := engine.Extent(s.H, math.Round)
		return w, h, okW && okH
	}
	return 0, 0, false
}

// Interp picks the filter for a scale change.
func (s *ResizeSpec) Interp(inW, outW int) imaging.Interp {
	if outW < inW {
		return s.Min
	}
	return s.Mag
}

type resizeOp struct {
	args *engine.Args
	spec *ResizeSpec
	// dynamic: some size comes from a pipeline value, so the output size is known only per
	// sample; the decoder gets no size hint and crop_mirror_normalize does not fuse it.
	dynamic bool
}

type resizeState struct {
	plan    imaging.ResizePlan
	scratch imaging.Scratch
	roi     [4]float64
	spec    ResizeSpec // this sample's spec when sizes are per sample
}

func newResize(a *engine.Args) (*resizeOp, error) {
	if a.DType("dtype") != engine.UInt8 {
		return nil, a.Errorf("dtype", "only UINT8 is supported, got %s", a.DType("dtype"))
	}
	s, err := parseResizeSpec(a)
	if err != nil {
		return nil, err
	}
	return &resizeOp{args: a, spec: s, dynamic: a.AnyPerSample(resizeSizeArgs...)}, nil
}

func (r *resizeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	c := in[0].Shape[2]
	shape := []int{-1, -1, c}
	if w, h, ok := r.spec.StaticSize(); ok && !r.dynamic {
		shape = []int{h, w, c}
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "HWC", Shape: shape}}, nil
}

// OutputSizeFor implements SizeHinter.
func (r *resizeOp) OutputSizeFor(w, h int) (int, int) {
	if r.dynamic {
		return 0, 0 // not known before the sample's arguments: no hint
	}
	roi := r.spec.ROI(w, h)
	ow, oh, ok := r.spec.OutputSize(roi[2]-roi[0], roi[3]-roi[1])
	if !ok {
		return 0, 0 // Setup reports it
	}
	return ow, oh
}

func (r *resizeOp) NewWorkerState() any { return &resizeState{} }

func (r *resizeOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	st := ws.State.(*resizeState)
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	spec, err := r.specAt(ws, &st.spec)
	if err != nil {
		return err
	}
	st.roi = spec.ROI(w, h)
	ow, oh, err := spec.sampleSize(r.args, ws, &st.roi, w, h)
	if err != nil {
		return err
	}
	ws.Out[0].SetShape(oh, ow, c)
	return nil
}

func (r *resizeOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	st := ws.State.(*resizeState)
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	oh, ow := out.Shape[0], out.Shape[1]
	if err := st.plan.Init(w, h, st.roi, ow, oh, r.spec.Interp(w, ow), r.spec.Antialias); err != nil {
		return err
	}
	return st.plan.Resize(out.Data, in.Data, c, &st.scratch)
}
