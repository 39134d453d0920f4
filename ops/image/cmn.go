package image

import (
	"fmt"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "crop_mirror_normalize",
		Doc: "Crops, mirrors, normalizes (out = scale * (in - mean) / std + shift) and changes the " +
			"layout and type of images (HWC, CHW), volumes (DHWC, CDHW) and sequences of them (F first) in " +
			"one pass; no layout means HWC. HWC uint8 images take a fused fast path, and a resize feeding " +
			"them is fused in.",
		Sequences: engine.PerFrame, Volumetric: true,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: []engine.ArgSpec{
			{Name: "crop", Type: engine.ArgFloatList, TensorInput: true, Doc: "crop size (height, width); default: no crop"},
			{Name: "crop_h", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop height (alternative to crop)"},
			{Name: "crop_w", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop width (alternative to crop)"},
			{Name: "crop_pos_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "horizontal position of the crop in [0, 1]; start = round(pos * (width - crop_w))"},
			{Name: "crop_pos_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "vertical position of the crop in [0, 1]"},
			{Name: "crop_d", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop depth of volumes (the D axis; F for sequences without D); 0: whole"},
			{Name: "crop_pos_z", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "depthwise position of the crop in [0, 1]"},
			{Name: "mirror", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip horizontally when nonzero; per sample from random.coin_flip"},
			{Name: "mean", Type: engine.ArgFloatList, Default: []float64{0}, TensorInput: true, Doc: "per-channel mean (a scalar applies to all)"},
			{Name: "std", Type: engine.ArgFloatList, Default: []float64{1}, TensorInput: true, Doc: "per-channel standard deviation"},
			{Name: "scale", Type: engine.ArgFloat, Default: 1.0, Doc: "multiplies the normalized value"},
			{Name: "shift", Type: engine.ArgFloat, Default: 0.0, Doc: "added after scaling"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "FLOAT, FLOAT16, UINT8 or INT8"},
			{Name: "output_layout", Type: engine.ArgString, Default: "CHW", Doc: "the output's layout: a permutation of the input's (CHW, HWC, CDHW, FCHW, ...); the input's F is kept first when left out"},
			{Name: "pad_output", Type: engine.ArgBool, Default: false, Doc: "pad channels to the next power of two with zeros"},
			{Name: "out_of_bounds_policy", Type: engine.ArgString, Default: "error", Doc: "a crop leaving the input: error, pad (with fill_values) or trim_to_shape"},
			{Name: "fill_values", Type: engine.ArgFloatList, Default: []float64{0}, Doc: "output value of the padding: one, or one per channel"},
			cropStartRoundingArg,
			cropRoundingArg,
		},
	})
	engine.RegisterBackend("crop_mirror_normalize", "cpu", func(a *engine.Args) (engine.Operator, error) { return newCMN(a) })
}

// CMNSpec is a parsed crop_mirror_normalize.
type CMNSpec struct {
	args           *engine.Args
	CropW, CropH   int // 0 = whole input
	Mean, Std      []float32
	Scale, Shift   float32
	Out            imaging.DType
	OutDType       engine.DType
	CHW            bool
	Pad            bool
	PadOutOfBounds bool
	Trim           bool      // out_of_bounds_policy trim_to_shape
	Fill           []float32 // fill_values
	OutLayout      string
	cropD          bool // crop_d given: the generic path
	dynCrop        bool // the crop size comes from pipeline values
	dynNorm        bool // mean or std comes from pipeline values
	rounding       cropRounding
	read           func(src []byte, k int) float64 // the input's elements (generic path)
}

func newCMN(a *engine.Args) (*cmnOp, error) {
	s := &CMNSpec{args: a, Scale: float32(a.Float("scale")), Shift: float32(a.Float("shift")), Pad: a.Bool("pad_output")}
	if err := a.CheckExtentArgs("crop", "crop_h", "crop_w", "crop_d"); err != nil {
		return nil, err
	}
	if err := checkCropPair(a); err != nil {
		return nil, err
	}
	if a.GivenConstant("crop") {
		if a.GivenConstant("crop_h") || a.GivenConstant("crop_w") {
			return nil, a.Errorf("crop", "give crop or crop_h/crop_w, not both")
		}
		c, err := a.FloatPair("crop")
		if err != nil {
			return nil, err
		}
		s.CropH, s.CropW = int(c[0]), int(c[1])
	} else {
		s.CropH, s.CropW = int(a.Float("crop_h")), int(a.Float("crop_w"))
	}
	s.dynCrop = a.AnyPerSample("crop", "crop_h", "crop_w")
	s.dynNorm = a.AnyPerSample("mean", "std")
	if a.Given("crop") && (a.Given("crop_h") || a.Given("crop_w")) {
		return nil, a.Errorf("crop", "give crop or crop_h/crop_w, not both")
	}
	if !s.dynCrop && (s.CropH < 0 || s.CropW < 0 || (s.CropH == 0) != (s.CropW == 0)) {
		return nil, a.Errorf("crop", "expected a positive (height, width), got %dx%d", s.CropH, s.CropW)
	}
	for _, m := range a.Floats("mean") {
		s.Mean = append(s.Mean, float32(m))
	}
	for _, v := range a.Floats("std") {
		if v == 0 {
			return nil, a.Errorf("std", "must not contain 0")
		}
		s.Std = append(s.Std, float32(v))
	}
	s.OutDType = a.DType("dtype")
	switch s.OutDType {
	case engine.Float32:
		s.Out = imaging.Float32
	case engine.Float16:
		s.Out = imaging.Float16
	case engine.UInt8:
		s.Out = imaging.UInt8
	case engine.Int8:
		s.Out = imaging.Int8
	default:
		return nil, a.Errorf("dtype", "expected FLOAT, FLOAT16, UINT8 or INT8, got %s", s.OutDType)
	}
	s.OutLayout = a.String("output_layout")
	s.CHW = s.OutLayout == "CHW"
	if s.OutLayout == "" || strings.Count(s.OutLayout, "C") != 1 {
		return nil, a.Errorf("output_layout", "expected a layout with one C (CHW, HWC, CDHW, FCHW, ...), got %q", s.OutLayout)
	}
	switch a.String("out_of_bounds_policy") {
	case "error":
	case "pad":
		s.PadOutOfBounds = true
	case "trim_to_shape":
		s.Trim = true
	default:
		return nil, a.Errorf("out_of_bounds_policy", "expected error, pad or trim_to_shape, got %q", a.String("out_of_bounds_policy"))
	}
	for _, f := range a.Floats("fill_values") {
		s.Fill = append(s.Fill, float32(f))
	}
	s.cropD = a.Given("crop_d")
	var err error
	if s.rounding, err = parseCropRounding(a); err != nil {
		return nil, err
	}
	return &cmnOp{spec: s}, nil
}

func (s *CMNSpec) outChannels(c int) int {
	if s.Pad {
		p := 1
		for p < c {
			p *= 2
		}
		return p
	}
	return c
}

// cmnLayouts are the input layouts crop_mirror_normalize takes (DALI's).
var cmnLayouts = []string{"HWC", "CHW", "FHWC", "FCHW", "CFHW", "DHWC", "CDHW", "FDHWC", "FCDHW", "CFDHW"}

// inputLayout is the layout the sample is processed as: its own, or HWC for a 3-d
// sample without one.
func (s *CMNSpec) inputLayout(layout string, ndim int) (string, error) {
	if layout == "" && ndim == 3 {
		layout = "HWC"
	}
	for _, l := range cmnLayouts {
		if l == layout {
			return layout, nil
		}
	}
	if layout == "" {
		return "", fmt.Errorf("input 0 has no layout and %d dimensions: it does not match any of the allowed layouts (a 3-d input without one is taken as HWC). Valid layouts are: %s", ndim, strings.Join(cmnLayouts, ", "))
	}
	return "", fmt.Errorf("The layout %q does not match any of the allowed layouts for input 0. Valid layouts are: %s", layout, strings.Join(cmnLayouts, ", "))
}

// outputLayout is output_layout for an input of layout in (its F kept first and its D
// kept before H when output_layout leaves them out), with perm[i] the input axis of
// output axis i.
func (s *CMNSpec) outputLayout(in string, perm []int) (string, []int, error) {
	o := s.OutLayout
	if o[0] == 'F' && strings.IndexByte(in, 'F') < 0 {
		o = o[1:] // a frame of a sequence (the graph runs sequences frame by frame)
	}
	if strings.IndexByte(in, 'D') >= 0 && strings.IndexByte(o, 'D') < 0 {
		o = strings.Replace(o, "H", "DH", 1)
	}
	if in[0] == 'F' && strings.IndexByte(o, 'F') < 0 {
		o = "F" + o
	}
	perm = perm[:0]
	for i := 0; i < len(o); i++ {
		j := strings.IndexByte(in, o[i])
		if j < 0 || strings.IndexByte(o[i+1:], o[i]) >= 0 {
			break
		}
		perm = append(perm, j)
	}
	if len(o) != len(in) || len(perm) != len(in) {
		return "", nil, s.args.Errorf("output_layout", "%q is not a permutation of the input layout %q", s.OutLayout, in)
	}
	return o, perm, nil
}

// fast reports whether samples of this layout and type take the fused HWC uint8 kernel.
func (s *CMNSpec) fast(layout string, dt engine.DType) bool {
	if layout != "HWC" || dt != engine.UInt8 || s.cropD || s.Trim || (s.OutLayout != "HWC" && s.OutLayout != "CHW") {
		return false
	}
	for _, f := range s.Fill {
		if f != 0 {
			return false
		}
	}
	return true
}

func (s *CMNSpec) meta(in engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in.Shape == nil || in.DType.Size() == 0 || in.DType == engine.Bool {
		return nil, s.args.Invalidf("input 0 must be images of known rank and a numeric type, got %s %v", in.DType, in.Shape)
	}
	s.read = readerOf(in.DType)
	lazy := make([]int, len(in.Shape))
	for i := range lazy {
		lazy[i] = -1
	}
	if in.Layout == "" && (len(in.Shape) == 4 || len(in.Shape) == 5) {
		// A volume or sequence whose layout comes with the data (feed_input): checked
		// per sample.
		return []engine.TensorMeta{{DType: s.OutDType, Shape: lazy}}, nil
	}
	lay, err := s.inputLayout(in.Layout, len(in.Shape))
	if err != nil {
		return nil, s.args.Invalidf("%v", err)
	}
	outLay, _, err := s.outputLayout(lay, nil)
	if err != nil {
		return nil, err
	}
	if !s.fast(lay, in.DType) {
		return []engine.TensorMeta{{DType: s.OutDType, Layout: outLay, Shape: lazy}}, nil
	}
	c := in.Shape[2]
	for _, l := range [][]float32{s.Mean, s.Std} {
		if !s.dynNorm && len(l) != 1 && c > 0 && len(l) != c {
			return nil, s.args.Errorf("mean", "mean and std need 1 or %d values (one per channel), got %d", c, len(l))
		}
	}
	h, w := in.Shape[0], in.Shape[1]
	if s.dynCrop {
		h, w = -1, -1
	} else if s.CropW > 0 {
		h, w = s.CropH, s.CropW
	}
	oc := -1
	if c > 0 {
		oc = s.outChannels(c)
	}
	m := engine.TensorMeta{DType: s.OutDType, Layout: "HWC", Shape: []int{h, w, oc}}
	if s.CHW {
		m.Layout, m.Shape = "CHW", []int{oc, h, w}
	}
	return []engine.TensorMeta{m}, nil
}

// readerOf reads element k of a tensor of type dt as float64.
func readerOf(dt engine.DType) func(src []byte, k int) float64 {
	sz := dt.Size()
	return func(src []byte, k int) float64 { return engine.ReadScalar(src[k*sz:], dt) }
}

// outOfBoundsMessage is DALI's wording for a window leaving the input.
const outOfBoundsMessage = "Slice can't be placed out of bounds with current policy."

// paramsND fills the generic description of one sample (any layout and type).
func (s *CMNSpec) paramsND(ws *engine.Workspace, st *cmnState) error {
	a := s.args
	in := ws.In[0]
	lay, err := s.inputLayout(in.Layout, len(in.Shape))
	if err != nil {
		return a.DataErrorf(ws, "%v", err)
	}
	outLay, perm, err := s.outputLayout(lay, st.nd.Perm)
	if err != nil {
		return err
	}
	nd := &st.nd
	n := len(in.Shape)
	nd.Perm, nd.InShape = perm, in.Shape
	nd.Start, nd.Size = nd.Start[:0], nd.Size[:0]
	for _, e := range in.Shape {
		nd.Start = append(nd.Start, 0)
		nd.Size = append(nd.Size, e)
	}
	cw, ch := s.CropW, s.CropH
	if s.dynCrop {
		if cw, ch, err = cropSizeAt(a, ws); err != nil {
			return err
		}
	}
	cd := 0.0
	if s.cropD {
		if cd, err = a.FloatAt(ws, "crop_d"); err != nil {
			return err
		}
		if !(cd >= 0 && cd < 1<<30) {
			return a.ArgDataErrorf(ws, "crop_d", "expected a non-negative depth, got %g", cd)
		}
	}
	wAx, hAx, dAx := strings.IndexByte(lay, 'W'), strings.IndexByte(lay, 'H'), strings.IndexByte(lay, 'D')
	if dAx < 0 && s.cropD {
		dAx = strings.IndexByte(lay, 'F') // a sequence cropped along its frames
	}
	for _, c := range [3]struct {
		ax   int
		crop int
		pos  string
	}{{wAx, cw, "crop_pos_x"}, {hAx, ch, "crop_pos_y"}, {dAx, int(cd), "crop_pos_z"}} {
		if c.ax < 0 || c.crop <= 0 {
			continue
		}
		p, err := a.FloatAt(ws, c.pos)
		if err != nil {
			return err
		}
		if nd.Start[c.ax], err = s.rounding.startAt(a, ws, c.pos, p, in.Shape[c.ax]-c.crop); err != nil {
			return err
		}
		nd.Size[c.ax] = c.crop
	}
	for j := 0; j < n; j++ {
		if nd.Start[j] >= 0 && nd.Start[j]+nd.Size[j] <= in.Shape[j] {
			continue
		}
		switch {
		case s.Trim:
			lo, hi := max(nd.Start[j], 0), min(nd.Start[j]+nd.Size[j], in.Shape[j])
			nd.Start[j], nd.Size[j] = lo, max(hi-lo, 0)
		case !s.PadOutOfBounds:
			return a.DataErrorf(ws, "%s Got: start %v, shape %v for the input of shape %v (out_of_bounds_policy \"error\"; use \"pad\" or \"trim_to_shape\")", outOfBoundsMessage, nd.Start, nd.Size, in.Shape)
		}
	}
	cAx := strings.IndexByte(lay, 'C')
	c := in.Shape[cAx]
	nd.ChanAxis, nd.OutC = cAx, s.outChannels(c)
	nd.Mean, nd.Std = s.Mean, s.Std
	if s.dynNorm {
		if nd.Mean, nd.Std, err = s.normAt(ws, c); err != nil {
			return err
		}
	}
	for _, l := range [][]float32{nd.Mean, nd.Std} {
		if len(l) > 1 && len(l) != c {
			return a.DataErrorf(ws, "mean and std need 1 or %d values (one per channel), got %d", c, len(l))
		}
	}
	if len(s.Fill) > 1 && len(s.Fill) < c {
		return a.ArgDataErrorf(ws, "fill_values", "needs 1 or at least %d values (one per channel), got %d", c, len(s.Fill))
	}
	mirror, err := a.BoolAt(ws, "mirror")
	if err != nil {
		return err
	}
	nd.MirrorAxis = -1
	if mirror {
		nd.MirrorAxis = wAx
	}
	nd.Scale, nd.Shift, nd.Fill, nd.Out = s.Scale, s.Shift, s.Fill, s.Out
	out := ws.Out[0]
	st.shape = nd.OutShape(st.shape[:0])
	out.SetShape(st.shape...)
	out.Layout = outLay
	return nil
}

// cropAt is the crop of one sample whose (resized) input is w x h: where it starts and
// its size (the whole input when no crop is given).
func (s *CMNSpec) cropAt(ws *engine.Workspace, w, h int) (x, y, cw, ch int, err error) {
	cw, ch = s.CropW, s.CropH
	if s.dynCrop {
		if cw, ch, err = cropSizeAt(s.args, ws); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	if cw == 0 {
		cw, ch = w, h
	}
	x, y, err = cropPosAt(s.args, ws, w, h, cw, ch, s.rounding)
	return x, y, cw, ch, err
}

// params fills the normalization of one sample whose (resized) input is w x h.
func (s *CMNSpec) params(ws *engine.Workspace, w, h int, np *imaging.NormalizeParams) error {
	x, y, cw, ch, err := s.cropAt(ws, w, h)
	if err != nil {
		return err
	}
	mean, std := s.Mean, s.Std
	if s.dynNorm {
		var err error
		if mean, std, err = s.normAt(ws, ws.In[0].Shape[2]); err != nil {
			return err
		}
	}
	mirror, err := s.args.BoolAt(ws, "mirror")
	if err != nil {
		return err
	}
	if !s.PadOutOfBounds && (x < 0 || y < 0 || x+cw > w || y+ch > h) {
		return s.args.DataErrorf(ws, "%s Got: crop %dx%d at (%d, %d), which leaves the %dx%d image (out_of_bounds_policy=\"error\"; use \"pad\" or \"trim_to_shape\")", outOfBoundsMessage, cw, ch, x, y, w, h)
	}
	*np = imaging.NormalizeParams{Mean: mean, Std: std, Scale: s.Scale, Shift: s.Shift, Out: s.Out,
		CHW: s.CHW, PadChannels: s.Pad, Mirror: mirror, CropX: x, CropY: y, CropW: cw, CropH: ch}
	return nil
}

// normAt reads this sample's mean and std (either may be constant) and checks them
// against the sample's channel count c.
func (s *CMNSpec) normAt(ws *engine.Workspace, c int) ([]float32, []float32, error) {
	a := s.args
	var out [2][]float32
	for k, name := range []string{"mean", "std"} {
		v, err := a.FloatsAt(ws, name, nil)
		if err != nil {
			return nil, nil, err
		}
		if len(v) != 1 && len(v) != c {
			return nil, nil, a.ArgDataErrorf(ws, name, "needs 1 or %d values (one per channel), got %d", c, len(v))
		}
		f := make([]float32, len(v))
		for i, x := range v {
			if name == "std" && x == 0 {
				return nil, nil, a.ArgDataErrorf(ws, "std", "must not contain 0, got %v", v)
			}
			f[i] = float32(x)
		}
		out[k] = f
	}
	return out[0], out[1], nil
}

// cropSizeAt reads this sample's crop size (width, height) from crop or crop_h/crop_w,
// constant or per sample; 0, 0 means no crop.
func cropSizeAt(a *engine.Args, ws *engine.Workspace) (int, int, error) {
	var ch, cw float64
	if a.Given("crop") {
		c, err := a.FloatPairAt(ws, "crop")
		if err != nil {
			return 0, 0, err
		}
		ch, cw = c[0], c[1]
	} else {
		var err error
		if ch, err = a.FloatAt(ws, "crop_h"); err != nil {
			return 0, 0, err
		}
		if cw, err = a.FloatAt(ws, "crop_w"); err != nil {
			return 0, 0, err
		}
		if err := a.CheckExtents(ws, "crop_h", ch); err != nil {
			return 0, 0, err
		}
		if err := a.CheckExtents(ws, "crop_w", cw); err != nil {
			return 0, 0, err
		}
	}
	if !(ch >= 0 && cw >= 0 && ch < 1<<30 && cw < 1<<30) || (int(ch) == 0) != (int(cw) == 0) {
		return 0, 0, a.ArgDataErrorf(ws, "crop", "expected a positive (height, width), got %gx%g", ch, cw)
	}
	return int(cw), int(ch), nil
}

func (s *CMNSpec) setShape(t *engine.Tensor, cw, ch, c int) {
	oc := s.outChannels(c)
	if s.CHW {
		t.SetShape(oc, ch, cw)
		t.Layout = "CHW"
	} else {
		t.SetShape(ch, cw, oc)
		t.Layout = "HWC"
	}
}

type cmnOp struct{ spec *CMNSpec }

type cmnState struct {
	np      imaging.NormalizeParams
	generic bool // this sample takes the N-d path (nd)
	nd      imaging.NormalizeND
	shape   []int
}

func (o *cmnOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) { return o.spec.meta(in[0]) }

// WholeSequences: with crop_d, a sequence without D is cropped along its frames, so it
// is taken whole rather than frame by frame.
func (o *cmnOp) WholeSequences() bool { return o.spec.cropD }
func (o *cmnOp) NewWorkerState() any  { return &cmnState{} }

func (o *cmnOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*cmnState)
	in := ws.In[0]
	lay := in.Layout
	if lay == "" && len(in.Shape) == 3 {
		lay = "HWC"
	}
	st.generic = !o.spec.fast(lay, in.DType)
	if st.generic {
		return o.spec.paramsND(ws, st)
	}
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	if err := o.spec.params(ws, w, h, &st.np); err != nil {
		return err
	}
	o.spec.setShape(ws.Out[0], st.np.CropW, st.np.CropH, c)
	return nil
}

func (o *cmnOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*cmnState)
	in := ws.In[0]
	if st.generic {
		return imaging.CropMirrorNormalizeND(ws.Out[0].Data, in.Data, o.spec.read, &st.nd)
	}
	return imaging.CropMirrorNormalize(ws.Out[0].Data, in.Data, in.Shape[1], in.Shape[0], in.Shape[2], &st.np)
}

// Fuse absorbs a resize: the fused operator resamples straight into the normalized,
// cropped, mirrored output.
func (o *cmnOp) Fuse(p engine.Operator) (engine.Operator, bool) {
	r, ok := p.(*resizeOp)
	if !ok || r.dynamic || !o.spec.fast("HWC", engine.UInt8) {
		return nil, false
	}
	return &resizeCMNOp{resize: r, cmn: o}, true
}

// resizeCMNOp is resize followed by crop_mirror_normalize, in one pass.
type resizeCMNOp struct {
	resize *resizeOp
	cmn    *cmnOp
}

type resizeCMNState struct {
	resizeState
	np     imaging.NormalizeParams
	ow, oh int
}

func (o *resizeCMNOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m, err := o.resize.Infer(in)
	if err != nil {
		return nil, err
	}
	return o.cmn.Infer(m)
}

func (o *resizeCMNOp) OutputSizeFor(w, h int) (int, int) { return o.resize.OutputSizeFor(w, h) }
func (o *resizeCMNOp) NewWorkerState() any               { return &resizeCMNState{} }

func (o *resizeCMNOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*resizeCMNState)
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	spec := o.resize.spec
	st.roi = spec.ROI(w, h)
	var err error
	if st.ow, st.oh, err = spec.sampleSize(o.resize.args, ws, &st.roi, w, h); err != nil {
		return err
	}
	if err := o.cmn.spec.params(ws, st.ow, st.oh, &st.np); err != nil {
		return err
	}
	o.cmn.spec.setShape(ws.Out[0], st.np.CropW, st.np.CropH, c)
	return nil
}

// inputWindowState is the scratch of InputWindow: the sample's plan and a workspace for
// the argument helpers (the arguments InputWindow reads are constants).
type inputWindowState struct {
	plan imaging.ResizePlan
	ws   engine.Workspace
}

func (o *resizeCMNOp) NewWindowState() any { return &inputWindowState{} }

// InputWindow implements engine.WindowReader: the source pixels under the filters of
// the crop's resized pixels (imaging.ResizeCropSource), from the same plan and crop as
// Setup and Run derive, when neither depends on the sample's arguments.
func (o *resizeCMNOp) InputWindow(w, h int, state any) (x0, y0, x1, y1 int, ok bool) {
	st := state.(*inputWindowState)
	c := o.cmn.spec
	if o.resize.dynamic || c.dynCrop || c.args.AnyPerSample("crop_pos_x", "crop_pos_y") {
		return 0, 0, 0, 0, false
	}
	spec := o.resize.spec
	roi := spec.ROI(w, h)
	ow, oh, err := spec.sampleSize(o.resize.args, &st.ws, &roi, w, h)
	if err != nil {
		return 0, 0, 0, 0, false
	}
	x, y, cw, ch, err := c.cropAt(&st.ws, ow, oh)
	if err != nil || (!c.PadOutOfBounds && (x < 0 || y < 0 || x+cw > ow || y+ch > oh)) {
		return 0, 0, 0, 0, false // Setup reports it
	}
	if err := st.plan.Init(w, h, roi, ow, oh, spec.Interp(w, ow), spec.Antialias); err != nil {
		return 0, 0, 0, 0, false
	}
	np := imaging.NormalizeParams{CropX: x, CropY: y, CropW: cw, CropH: ch}
	return imaging.ResizeCropSource(&st.plan, &np)
}

func (o *resizeCMNOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*resizeCMNState)
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	if err := st.plan.Init(w, h, st.roi, st.ow, st.oh, o.resize.spec.Interp(w, st.ow), o.resize.spec.Antialias); err != nil {
		return err
	}
	return imaging.ResizeCropMirrorNormalize(ws.Out[0].Data, in.Data, w, h, c, &st.plan, &st.np, &st.scratch)
}
