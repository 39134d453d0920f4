package image

import (
	"fmt"
	"math"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
	"github.com/godali/godali/ops/decoders"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "crop",
		Doc: "Crops images (HWC, CHW), volumes (DHWC, CDHW) and sequences (F first; crop_d without D crops " +
			"the frames) of any type to (height, width) or (depth, height, width) at crop_pos_x/y/z; no layout " +
			"means HWC. HWC uint8 images take the image kernel.",
		Sequences: engine.PerFrame, Volumetric: true,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: []engine.ArgSpec{
			{Name: "crop", Type: engine.ArgFloatList, TensorInput: true, Doc: "crop size (height, width) or (depth, height, width); may come per sample"},
			{Name: "crop_h", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop height (alternative to crop)"},
			{Name: "crop_w", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop width (alternative to crop)"},
			{Name: "crop_d", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop depth of volumes (D; F for sequences without D)"},
			{Name: "crop_pos_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "horizontal position in [0, 1]: start = rounding(pos * (width - crop_w))"},
			{Name: "crop_pos_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "vertical position in [0, 1]"},
			{Name: "crop_pos_z", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "depthwise position in [0, 1]"},
			{Name: "out_of_bounds_policy", Type: engine.ArgString, Default: "error", Doc: "a window leaving the input: error, pad (with fill_values) or trim_to_shape"},
			{Name: "fill_values", Type: engine.ArgFloatList, Default: []float64{0}, Doc: "padding value: one, or one per channel"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type (default: the input's); values convert as cast does"},
			cropStartRoundingArg,
			{Name: "random_offset", Type: engine.ArgBool, Default: false, Doc: "godali only: draw the window's top-left corner per sample uniformly from the integers 0..W-width and 0..H-height (torchvision's RandomCrop) instead of crop_pos_x/crop_pos_y; an image smaller than the window is centred (HWC uint8 images)"},
			cropRoundingArg,
		},
	})
	engine.RegisterBackend("crop", "cpu", func(a *engine.Args) (engine.Operator, error) { return newCrop(a) })

	engine.RegisterSchema(&engine.Schema{
		Name: "flip",
		Doc: "Flips samples of any type along the W (horizontal), H (vertical) and D (depthwise) axes of their " +
			"layout (HWC, CHW, DHWC, CDHW, FHWC, FCHW, FDHWC, FCDHW, ...; no layout: HWC). Samples with no " +
			"elements pass through.",
		Sequences: engine.PerFrame, Volumetric: true,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: []engine.ArgSpec{
			{Name: "horizontal", Type: engine.ArgInt, Default: 1, TensorInput: true, Doc: "flip horizontally when nonzero"},
			{Name: "vertical", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip vertically when nonzero"},
			{Name: "depthwise", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip along D (volumes) when nonzero"},
		},
	})
	engine.RegisterBackend("flip", "cpu", func(a *engine.Args) (engine.Operator, error) { return &flipOp{args: a}, nil })

	engine.RegisterSchema(&engine.Schema{
		Name: "random_resized_crop",
		Doc: "Crops a random region (area and aspect ratio as torchvision's RandomResizedCrop) and resizes it to " +
			"size, along the H and W axes of any layout (HWC, CHW, FHWC, FCHW, CFHW, ...; no layout: HWC) and " +
			"type; HWC uint8 images take the fixed-point resize.",
		Sequences: engine.PerFrame,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: append([]engine.ArgSpec{
			{Name: "size", Type: engine.ArgFloatList, Required: true, Doc: "output size (height, width); a scalar applies to both"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: interpDoc},
			{Name: "antialias", Type: engine.ArgBool, Default: true, Doc: "widen the filter when downscaling"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type (default: the input's); integers round and saturate"},
		}, decoders.RandomCropArgs...),
	})
	engine.RegisterBackend("random_resized_crop", "cpu", func(a *engine.Args) (engine.Operator, error) { return newRandomResizedCrop(a) })
}

type cropOp struct {
	args     *engine.Args
	w, h     int
	d        int // crop depth (crop_d, or crop's first of three values); 0: none
	depth    bool
	pad      bool
	trim     bool
	fill     byte
	fills    []float64
	fillOne  bool // one fill value in [0, 255]: the image kernel can pad
	dyn      bool // the crop size comes from pipeline values
	random   bool // random_offset
	rounding cropRounding
	// the generic path (any layout and type)
	out     engine.DType
	outSet  bool
	fillOut []byte
	conv    func(dst, src []byte, n int)
}

type cropState struct{ start, size []int }

// checkCropPair refuses crop_h without crop_w or the reverse, and crop_d without them
// (DALI's crop attributes want them together; one alone would crop to a zero extent).
func checkCropPair(a *engine.Args) error {
	if a.Given("crop_h") != a.Given("crop_w") {
		return a.Errorf("crop_h", "crop_w and crop_h must be given together")
	}
	if a.Given("crop_d") && !a.Given("crop_w") {
		return a.Errorf("crop_d", "must be given together with crop_w and crop_h")
	}
	return nil
}

func newCrop(a *engine.Args) (*cropOp, error) {
	o := &cropOp{args: a}
	if err := a.CheckExtentArgs("crop", "crop_h", "crop_w", "crop_d"); err != nil {
		return nil, err
	}
	if err := checkCropPair(a); err != nil {
		return nil, err
	}
	if a.Has("crop") {
		c := a.Floats("crop")
		switch len(c) {
		case 1:
			o.h, o.w = int(c[0]), int(c[0])
		case 2:
			o.h, o.w = int(c[0]), int(c[1])
		case 3:
			o.d, o.h, o.w = int(c[0]), int(c[1]), int(c[2])
			o.depth = true
		default:
			return nil, a.Errorf("crop", "expected (height, width) or (depth, height, width), got %v", c)
		}
	} else {
		o.h, o.w = int(a.Float("crop_h")), int(a.Float("crop_w"))
	}
	if a.Given("crop_d") {
		o.depth, o.d = true, int(a.Float("crop_d"))
	}
	o.dyn = a.AnyPerSample("crop", "crop_h", "crop_w", "crop_d")
	if a.Given("crop") && (a.Given("crop_h") || a.Given("crop_w") || a.Given("crop_d")) {
		return nil, a.Errorf("crop", "give crop or crop_h/crop_w/crop_d, not both")
	}
	if !o.dyn && (o.w <= 0 || o.h <= 0 || (o.depth && o.d <= 0)) {
		return nil, a.Errorf("crop", "a positive crop size is required (crop or crop_h/crop_w)")
	}
	o.outSet = a.Has("dtype")
	if o.outSet && (a.DType("dtype").Size() == 0 || a.DType("dtype") == engine.Bool) {
		return nil, a.Errorf("dtype", "must be a numeric type")
	}
	switch a.String("out_of_bounds_policy") {
	case "error":
	case "pad":
		o.pad = true
	case "trim_to_shape":
		o.trim = true
	default:
		return nil, a.Errorf("out_of_bounds_policy", "expected error, pad or trim_to_shape, got %q", a.String("out_of_bounds_policy"))
	}
	o.fills = a.Floats("fill_values")
	if len(o.fills) == 0 {
		o.fills = []float64{0}
	}
	if f := o.fills[0]; len(o.fills) == 1 && f >= 0 && f <= 255 && f == math.Trunc(f) {
		o.fill, o.fillOne = byte(f), true
	}
	o.random = a.Bool("random_offset")
	var err error
	if o.rounding, err = parseCropRounding(a); err != nil {
		return nil, err
	}
	if o.random && (a.Given("crop_pos_x") || a.Given("crop_pos_y")) {
		return nil, a.Errorf("random_offset", "draws the position: give it or crop_pos_x/crop_pos_y, not both")
	}
	return o, nil
}

// layoutOf is the layout a sample is cropped as ("" with 3 dimensions: HWC) and its W,
// H and D axes (D: F for a sequence without D when a depth is cropped).
func (o *cropOp) layoutOf(layout string, ndim int) (string, [3]int, error) {
	if layout == "" && ndim == 3 {
		layout = "HWC"
	}
	ax := [3]int{strings.IndexByte(layout, 'W'), strings.IndexByte(layout, 'H'), strings.IndexByte(layout, 'D')}
	if ax[2] < 0 && o.depth {
		ax[2] = strings.IndexByte(layout, 'F')
	}
	if ax[0] < 0 || ax[1] < 0 || len(layout) != ndim {
		return "", ax, fmt.Errorf("The layout %q does not match any of the allowed layouts for input 0: crop needs H and W axes (HWC, CHW, DHWC, CDHW, FHWC, FCHW, ...)", layout)
	}
	return layout, ax, nil
}

// fast reports whether samples of this layout and type take the HWC uint8 image kernel.
func (o *cropOp) fast(layout string, dt engine.DType) bool {
	return layout == "HWC" && dt == engine.UInt8 && (!o.outSet || o.out == engine.UInt8) && !o.depth && !o.trim && o.fillOne
}

// WholeSequences: with a crop depth (or a per-sample crop, which may hold one), a
// sequence without D is cropped along its frames, so it is taken whole.
func (o *cropOp) WholeSequences() bool { return o.depth || o.args.AnyPerSample("crop") }

func (o *cropOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 || m.DType == engine.Bool {
		return nil, o.args.Invalidf("input 0 must be images of known rank and a numeric type, got %s %v", m.DType, m.Shape)
	}
	o.out = m.DType
	if o.outSet {
		o.out = o.args.DType("dtype")
	}
	o.conv = convertRun(m.DType, o.out)
	sz := o.out.Size()
	o.fillOut = make([]byte, sz*len(o.fills))
	for i, f := range o.fills {
		engine.WriteScalarSat(o.fillOut[i*sz:], o.out, f)
	}
	lazy := make([]int, len(m.Shape))
	for i := range lazy {
		lazy[i] = -1
	}
	if m.Layout == "" && len(m.Shape) != 3 {
		return []engine.TensorMeta{{DType: o.out, Shape: lazy}}, nil // the layout comes with the data
	}
	lay, _, err := o.layoutOf(m.Layout, len(m.Shape))
	if err != nil {
		return nil, o.args.Invalidf("%v", err)
	}
	if !o.fast(lay, m.DType) {
		return []engine.TensorMeta{{DType: o.out, Layout: lay, Shape: lazy}}, nil
	}
	c := m.Shape[2]
	if o.dyn {
		return []engine.TensorMeta{{DType: engine.UInt8, Layout: "HWC", Shape: []int{-1, -1, c}}}, nil
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "HWC", Shape: []int{o.h, o.w, c}}}, nil
}

func (o *cropOp) NewWorkerState() any { return &cropState{} }

// setupND places the sample's window along W, H and D of any layout.
func (o *cropOp) setupND(ws *engine.Workspace, lay string, ax [3]int) error {
	a, in, st := o.args, ws.In[0], ws.State.(*cropState)
	if o.random {
		return a.DataErrorf(ws, "random_offset takes HWC uint8 images; got %s %s", in.DType, lay)
	}
	size := [3]float64{float64(o.w), float64(o.h), float64(o.d)}
	if o.dyn {
		if a.Given("crop") {
			c, err := a.FloatsAt(ws, "crop", nil)
			if err != nil {
				return err
			}
			switch len(c) {
			case 2:
				size = [3]float64{c[1], c[0], 0}
			case 3:
				size = [3]float64{c[2], c[1], c[0]}
				if ax[2] < 0 {
					ax[2] = strings.IndexByte(lay, 'F')
				}
			default:
				return a.ArgDataErrorf(ws, "crop", "expected (height, width) or (depth, height, width), got %v", c)
			}
		} else {
			for k, n := range [3]string{"crop_w", "crop_h", "crop_d"} {
				v, err := a.FloatAt(ws, n)
				if err != nil {
					return err
				}
				size[k] = v
			}
		}
	}
	st.start, st.size = st.start[:0], st.size[:0]
	for _, e := range in.Shape {
		st.start = append(st.start, 0)
		st.size = append(st.size, e)
	}
	for k, name := range [3]string{"crop_pos_x", "crop_pos_y", "crop_pos_z"} {
		if ax[k] < 0 || (k == 2 && size[k] <= 0) {
			continue
		}
		if !(size[k] >= 1 && size[k] < 1<<30) {
			return a.ArgDataErrorf(ws, "crop", "a positive crop size is required, got %v", size)
		}
		p, err := a.FloatAt(ws, name)
		if err != nil {
			return err
		}
		c := int(size[k])
		if st.start[ax[k]], err = o.rounding.startAt(a, ws, name, p, in.Shape[ax[k]]-c); err != nil {
			return err
		}
		st.size[ax[k]] = c
	}
	for j := range in.Shape {
		if st.start[j] >= 0 && st.start[j]+st.size[j] <= in.Shape[j] {
			continue
		}
		switch {
		case o.trim:
			lo, hi := max(st.start[j], 0), min(st.start[j]+st.size[j], in.Shape[j])
			st.start[j], st.size[j] = lo, max(hi-lo, 0)
		case !o.pad:
			return a.DataErrorf(ws, "%s Got: start %v, shape %v for the input of shape %v (out_of_bounds_policy \"error\"; use \"pad\" or \"trim_to_shape\")", outOfBoundsMessage, st.start, st.size, in.Shape)
		}
	}
	if len(o.fills) > 1 {
		if c := channelAxis(lay, len(in.Shape)); st.size[c] > len(o.fills) {
			return a.ArgDataErrorf(ws, "fill_values", "%d values, one per channel, for %d channels", len(o.fills), st.size[c])
		}
	}
	out := ws.Out[0]
	out.DType, out.Layout = o.out, lay
	out.SetShape(st.size...)
	return nil
}

// sizeAt is the sample's crop size (width, height).
func (o *cropOp) sizeAt(ws *engine.Workspace) (int, int, error) {
	if !o.dyn {
		return o.w, o.h, nil
	}
	w, h, err := cropSizeAt(o.args, ws)
	if err == nil && (w <= 0 || h <= 0) {
		err = o.args.ArgDataErrorf(ws, "crop", "a positive crop size is required, got %dx%d", w, h)
	}
	return w, h, err
}

func (o *cropOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	lay, ax, err := o.layoutOf(in.Layout, len(in.Shape))
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if !o.fast(lay, in.DType) {
		return o.setupND(ws, lay, ax)
	}
	w, h, err := o.sizeAt(ws)
	if err != nil {
		return err
	}
	ws.Out[0].SetShape(h, w, ws.In[0].Shape[2])
	ws.Out[0].DType, ws.Out[0].Layout = engine.UInt8, "HWC"
	return nil
}

// window is the top-left corner of the sample's cw x ch window in a w x h image.
func (o *cropOp) window(ws *engine.Workspace, w, h, cw, ch int) (int, int, error) {
	if o.random {
		// x first, then y, from the sample's stream: uniform integers, both ends included.
		dx, dy := w-cw, h-ch
		x, y := dx/2, dy/2
		if dx >= 0 {
			x = ws.RNG.Intn(dx + 1)
		}
		if dy >= 0 {
			y = ws.RNG.Intn(dy + 1)
		}
		return x, y, nil
	}
	return cropPosAt(o.args, ws, w, h, cw, ch, o.rounding)
}

// cropPosAt is the top-left corner of a cw x ch window in a w x h image placed at
// crop_pos_x/crop_pos_y, rounded by r.
func cropPosAt(a *engine.Args, ws *engine.Workspace, w, h, cw, ch int, r cropRounding) (int, int, error) {
	px, err := a.FloatAt(ws, "crop_pos_x")
	if err != nil {
		return 0, 0, err
	}
	py, err := a.FloatAt(ws, "crop_pos_y")
	if err != nil {
		return 0, 0, err
	}
	x, err := r.startAt(a, ws, "crop_pos_x", px, w-cw)
	if err != nil {
		return 0, 0, err
	}
	y, err := r.startAt(a, ws, "crop_pos_y", py, h-ch)
	return x, y, err
}

// cropStartRoundingArg is DALI's rounding of crop and crop_mirror_normalize.
var cropStartRoundingArg = engine.ArgSpec{Name: "rounding", Type: engine.ArgString, Default: "round", Doc: "how the window's start pos * (extent - crop) becomes an index: round (half away from zero) or truncate (toward zero)"}

// cropRoundingArg selects how a window's start, pos * (size - crop), becomes a pixel.
var cropRoundingArg = engine.ArgSpec{Name: "crop_rounding", Type: engine.ArgString, Default: "half_up",
	Doc: "godali only: how the window's start pos * (size - crop) is rounded: \"half_up\" (DALI's rounding: " +
		"half away from zero, unless rounding says truncate) or \"torchvision\" (half to even, Python's round, as " +
		"torchvision's CenterCrop; where the image is smaller than the window it is padded as torchvision pads, " +
		"(crop - size) // 2 before)"}

// cropRounding is how a window's start becomes an index.
type cropRounding int

const (
	roundHalfAway cropRounding = iota // DALI's rounding="round"
	roundTorchvision
	roundTruncate // DALI's rounding="truncate"
)

func parseCropRounding(a *engine.Args) (cropRounding, error) {
	r := roundHalfAway
	switch v := a.String("rounding"); v {
	case "", "round":
	case "truncate":
		r = roundTruncate
	default:
		return 0, a.Errorf("rounding", "expected \"round\" or \"truncate\", got %q", v)
	}
	switch v := a.String("crop_rounding"); v {
	case "half_up":
	case "torchvision":
		if a.Has("rounding") {
			return 0, a.Errorf("crop_rounding", "give rounding or crop_rounding=\"torchvision\", not both")
		}
		r = roundTorchvision
	default:
		return 0, a.Errorf("crop_rounding", "expected \"half_up\" or \"torchvision\", got %q", v)
	}
	return r, nil
}

// start is the window's first pixel along a dimension where the image is d pixels
// larger than the window (d < 0: smaller, padded).
// ok=false when pos * d is no usable extent (engine.Extent: NaN, infinite, too large).
func (r cropRounding) start(pos float64, d int) (int, bool) {
	x := pos * float64(d)
	switch {
	case r == roundTorchvision && d > 0:
		return engine.Extent(x, math.RoundToEven)
	case r == roundTorchvision:
		return engine.Extent(x+0.5, math.Floor)
	case r == roundTruncate:
		return engine.Extent(x, math.Trunc)
	}
	return engine.Extent(x, math.Round)
}

// startAt is start for the position argument name of the workspace's sample, an error
// naming it when the position is no usable extent.
func (r cropRounding) startAt(a *engine.Args, ws *engine.Workspace, name string, pos float64, d int) (int, error) {
	x, ok := r.start(pos, d)
	if !ok {
		return 0, a.ExtentError(ws, name, pos*float64(d))
	}
	return x, nil
}

func (o *cropOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	if lay, _, _ := o.layoutOf(in.Layout, len(in.Shape)); !o.fast(lay, in.DType) {
		st := ws.State.(*cropState)
		return imaging.SliceND(ws.Out[0].Data, o.out.Size(), in.Data, in.DType.Size(), in.Shape, st.start, st.size,
			o.fillOut, channelAxis(lay, len(in.Shape)), o.conv)
	}
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	cw, ch := ws.Out[0].Shape[1], ws.Out[0].Shape[0]
	x, y, err := o.window(ws, w, h, cw, ch)
	if err != nil {
		return err
	}
	if !o.pad && (x < 0 || y < 0 || x+cw > w || y+ch > h) {
		return o.args.DataErrorf(ws, "%s Got: crop %dx%d at (%d, %d), which leaves the %dx%d image (out_of_bounds_policy=\"error\"; use \"pad\" or \"trim_to_shape\")", outOfBoundsMessage, cw, ch, x, y, w, h)
	}
	return imaging.Crop(ws.Out[0].Data, in.Data, w, h, c, x, y, cw, ch, o.fill)
}

type flipOp struct{ args *engine.Args }

type flipState struct{ flip []bool }

func (o *flipOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.IsDynamic() {
		return []engine.TensorMeta{m}, nil // a python_function's output: checked per sample
	}
	if m.DType.Size() == 0 {
		return nil, o.args.Invalidf("input must be a tensor of a numeric type, got %s", m.DType)
	}
	if m.Layout != "" {
		if _, err := flipAxes(m.Layout, len(m.Layout)); err != nil {
			return nil, o.args.Invalidf("%v", err)
		}
	}
	return []engine.TensorMeta{m}, nil
}

// flipAxes finds the W, H and D axes of a layout ("" stands for HWC); -1 for an absent
// one.
func flipAxes(layout string, ndim int) ([3]int, error) {
	if layout == "" {
		if ndim != 3 {
			return [3]int{}, fmt.Errorf("a %d-d input without a layout: give its layout (e.g. CHW, DHWC)", ndim)
		}
		layout = "HWC"
	}
	ax := [3]int{strings.IndexByte(layout, 'W'), strings.IndexByte(layout, 'H'), strings.IndexByte(layout, 'D')}
	if ax[0] < 0 && ax[1] < 0 && ax[2] < 0 {
		return ax, fmt.Errorf("layout %q has none of the W, H, D axes flip works on", layout)
	}
	return ax, nil
}

func (o *flipOp) NewWorkerState() any { return &flipState{} }

// TakesDynamicInputs: flip reads its input's type, shape and layout per sample, so it
// may follow a python_function (whose output type is known only when it runs).
func (o *flipOp) TakesDynamicInputs() bool { return true }

func (o *flipOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	ws.Out[0].DType = in.DType // a python_function's output: known per sample (Run checks the layout)
	ws.Out[0].SetShape(in.Shape...)
	ws.Out[0].Layout = in.Layout
	return nil
}

// flags are the sample's horizontal and vertical flips.
func (o *flipOp) flags(ws *engine.Workspace) (h, v bool, err error) {
	if h, err = o.args.BoolAt(ws, "horizontal"); err != nil {
		return
	}
	v, err = o.args.BoolAt(ws, "vertical")
	return
}

func (o *flipOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	fh, fv, err := o.flags(ws)
	if err != nil {
		return err
	}
	fd, err := o.args.BoolAt(ws, "depthwise")
	if err != nil {
		return err
	}
	ax, err := flipAxes(in.Layout, len(in.Shape))
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if numElements(in.Shape) == 0 {
		return nil
	}
	if in.DType == engine.UInt8 && len(in.Shape) == 3 && ax[0] == 1 && ax[1] == 0 {
		return imaging.Flip(ws.Out[0].Data, in.Data, in.Shape[1], in.Shape[0], in.Shape[2], fh, fv)
	}
	st := ws.State.(*flipState)
	st.flip = st.flip[:0]
	for range in.Shape {
		st.flip = append(st.flip, false)
	}
	for k, on := range [3]bool{fh, fv, fd} {
		if on && ax[k] >= 0 {
			st.flip[ax[k]] = true
		}
	}
	return imaging.FlipND(ws.Out[0].Data, in.Data, in.Shape, in.DType.Size(), st.flip)
}

type randomResizedCropOp struct {
	args   *engine.Args
	crop   *decoders.RandomCrop
	w, h   int
	interp imaging.Interp
	aa     bool
	out    engine.DType                    // output type (the generic path)
	read   func(src []byte, k int) float32 // the input's elements (the generic path)
}

func newRandomResizedCrop(a *engine.Args) (*randomResizedCropOp, error) {
	rc, err := decoders.ParseRandomCrop(a)
	if err != nil {
		return nil, err
	}
	s, err := a.FloatPair("size")
	if err == nil {
		err = a.CheckExtentArgs("size")
	}
	if err != nil {
		return nil, err
	}
	if s[0] < 1 || s[1] < 1 {
		return nil, a.Errorf("size", "expected (height, width) >= 1, got %v", a.Floats("size"))
	}
	if a.Has("dtype") && (a.DType("dtype").Size() == 0 || a.DType("dtype") == engine.Bool) {
		return nil, a.Errorf("dtype", "must be a numeric type")
	}
	interp, _ := imaging.ParseInterp(a.String("interp_type"))
	return &randomResizedCropOp{args: a, crop: rc, h: int(s[0]), w: int(s[1]), interp: interp, aa: a.Bool("antialias")}, nil
}

// rrcLayout is the layout a sample is processed as, and its H and W axes.
func rrcLayout(layout string, ndim int) (string, int, int, error) {
	if layout == "" && ndim == 3 {
		layout = "HWC"
	}
	h, w := strings.IndexByte(layout, 'H'), strings.IndexByte(layout, 'W')
	if h < 0 || w < 0 || len(layout) != ndim {
		return "", 0, 0, fmt.Errorf("input layout %q (%d dimensions) has no H and W axes to crop", layout, ndim)
	}
	return layout, h, w, nil
}

// fast reports whether samples take the fixed-point HWC uint8 resize.
func (o *randomResizedCropOp) fast(layout string, in engine.DType) bool {
	return layout == "HWC" && in == engine.UInt8 && o.out == engine.UInt8
}

func (o *randomResizedCropOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 || m.DType == engine.Bool {
		return nil, o.args.Invalidf("input 0 must be images of known rank and a numeric type, got %s %v", m.DType, m.Shape)
	}
	o.out = m.DType
	if o.args.Has("dtype") {
		o.out = o.args.DType("dtype")
	}
	sz := m.DType.Size()
	dt := m.DType
	o.read = func(src []byte, k int) float32 { return float32(engine.ReadScalar(src[k*sz:], dt)) }
	shape := make([]int, len(m.Shape))
	for i := range shape {
		shape[i] = -1
	}
	if m.Layout == "" && len(m.Shape) != 3 {
		return []engine.TensorMeta{{DType: o.out, Shape: shape}}, nil // the layout comes with the data
	}
	lay, h, w, err := rrcLayout(m.Layout, len(m.Shape))
	if err != nil {
		return nil, o.args.Invalidf("%v", err)
	}
	copy(shape, m.Shape)
	shape[h], shape[w] = o.h, o.w
	return []engine.TensorMeta{{DType: o.out, Layout: lay, Shape: shape}}, nil
}

type rrcState struct {
	resizeState
	generic bool
	h, w    int // the sample's H and W axes
	th, tw  imaging.FloatTaps
	tmp     []float32
	res     []float32
	mid     []int
}

func (o *randomResizedCropOp) NewWorkerState() any { return &rrcState{} }

func (o *randomResizedCropOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*rrcState)
	in := ws.In[0]
	lay, h, w, err := rrcLayout(in.Layout, len(in.Shape))
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if in.Shape[h] < 1 || in.Shape[w] < 1 {
		return o.args.DataErrorf(ws, "cannot crop an empty image %v", in.Shape)
	}
	r := o.crop.Window(in.Shape[w], in.Shape[h], ws.RNG)
	st.roi = [4]float64{float64(r.X), float64(r.Y), float64(r.X + r.W), float64(r.Y + r.H)}
	st.generic = !o.fast(lay, in.DType)
	out := ws.Out[0]
	out.DType, out.Layout = o.out, lay
	if !st.generic {
		out.SetShape(o.h, o.w, in.Shape[2])
		return nil
	}
	st.h, st.w = h, w
	// The window is resampled as an image of its own (torchvision crops, then resizes):
	// taps over the window, moved to its place in the input.
	if err := st.th.Init(r.H, 0, float64(r.H), o.h, o.interp, o.aa); err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if err := st.tw.Init(r.W, 0, float64(r.W), o.w, o.interp, o.aa); err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	st.th.Shift(r.Y)
	st.tw.Shift(r.X)
	out.SetShape(in.Shape...)
	out.Shape[h], out.Shape[w] = o.h, o.w
	return nil
}

func (o *randomResizedCropOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*rrcState)
	in := ws.In[0]
	if !st.generic {
		// The window alone, as torchvision crops before it resizes: the filters read no
		// pixel outside it.
		x, y := int(st.roi[0]), int(st.roi[1])
		ww, wh := int(st.roi[2])-x, int(st.roi[3])-y
		c, stride := in.Shape[2], in.Shape[1]*in.Shape[2]
		if err := st.plan.Init(ww, wh, imaging.FullROI(ww, wh), o.w, o.h, o.interp, o.aa); err != nil {
			return err
		}
		return st.plan.ResizeStrided(ws.Out[0].Data, in.Data[y*stride+x*c:], c, stride, &st.scratch)
	}
	// Along H (reading the input), then along W.
	s := in.Shape
	d0, d2 := numElements(s[:st.h]), numElements(s[st.h+1:])
	st.tmp = growFloats(st.tmp, d0*o.h*d2)
	if err := imaging.ResampleAxis(st.tmp, in.Data, o.read, d0, s[st.h], d2, &st.th); err != nil {
		return err
	}
	st.mid = append(st.mid[:0], s...) // the shape between the passes
	st.mid[st.h] = o.h
	d0, d2 = numElements(st.mid[:st.w]), numElements(st.mid[st.w+1:])
	st.res = growFloats(st.res, d0*o.w*d2)
	if err := imaging.ResampleAxis(st.res, st.tmp, atFloat, d0, s[st.w], d2, &st.tw); err != nil {
		return err
	}
	sz, dst := o.out.Size(), ws.Out[0].Data
	for k, v := range st.res {
		engine.WriteScalarSat(dst[k*sz:], o.out, float64(v))
	}
	return nil
}

func atFloat(s []float32, k int) float32 { return s[k] }
