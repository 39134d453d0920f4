package image

import (
	"fmt"
	"math"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
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

func newCrop(a *engine.Args) (*cropOp, error) {
	o := &cropOp{args: a}
	if err := a.CheckExtentArgs("crop", "crop_h", "crop_w", "crop_d"); err != nil {
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
