package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "crop_mirror_normalize",
		Doc: "Crops, mirrors, normalizes (out = scale * (in - mean) / std + shift) and changes the " +
			"layout and type of HWC uint8 images in one pass. A resize feeding it is fused in.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "crop", Type: engine.ArgFloatList, TensorInput: true, Doc: "crop size (height, width); default: no crop"},
			{Name: "crop_h", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop height (alternative to crop)"},
			{Name: "crop_w", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop width (alternative to crop)"},
			{Name: "crop_pos_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "horizontal position of the crop in [0, 1]; start = round(pos * (width - crop_w))"},
			{Name: "crop_pos_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "vertical position of the crop in [0, 1]"},
			{Name: "mirror", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip horizontally when nonzero; per sample from random.coin_flip"},
			{Name: "mean", Type: engine.ArgFloatList, Default: []float64{0}, TensorInput: true, Doc: "per-channel mean (a scalar applies to all)"},
			{Name: "std", Type: engine.ArgFloatList, Default: []float64{1}, TensorInput: true, Doc: "per-channel standard deviation"},
			{Name: "scale", Type: engine.ArgFloat, Default: 1.0, Doc: "multiplies the normalized value"},
			{Name: "shift", Type: engine.ArgFloat, Default: 0.0, Doc: "added after scaling"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "FLOAT, FLOAT16, UINT8 or INT8"},
			{Name: "output_layout", Type: engine.ArgString, Default: "CHW", Doc: "CHW or HWC"},
			{Name: "pad_output", Type: engine.ArgBool, Default: false, Doc: "pad channels to the next power of two with zeros"},
			{Name: "out_of_bounds_policy", Type: engine.ArgString, Default: "error", Doc: "error, or pad (with fill_values) when the crop leaves the image"},
			{Name: "fill_values", Type: engine.ArgFloatList, Default: []float64{0}, Doc: "padding value (only 0)"},
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
	dynCrop        bool // the crop size comes from pipeline values
	dynNorm        bool // mean or std comes from pipeline values
	rounding       cropRounding
}

func newCMN(a *engine.Args) (*cmnOp, error) {
	s := &CMNSpec{args: a, Scale: float32(a.Float("scale")), Shift: float32(a.Float("shift")), Pad: a.Bool("pad_output")}
	if a.Has("crop") {
		if a.Has("crop_h") || a.Has("crop_w") {
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
	switch a.String("output_layout") {
	case "CHW":
		s.CHW = true
	case "HWC":
	default:
		return nil, a.Errorf("output_layout", "expected CHW or HWC, got %q", a.String("output_layout"))
	}
	switch a.String("out_of_bounds_policy") {
	case "error":
	case "pad":
		s.PadOutOfBounds = true
	default:
		return nil, a.Errorf("out_of_bounds_policy", "expected error or pad, got %q", a.String("out_of_bounds_policy"))
	}
	for _, f := range a.Floats("fill_values") {
		if f != 0 {
			return nil, a.Errorf("fill_values", "only 0 is supported, got %v", a.Floats("fill_values"))
		}
	}
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

func (s *CMNSpec) meta(in engine.TensorMeta) ([]engine.TensorMeta, error) {
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

// params fills the normalization of one sample whose (resized) input is w x h.
func (s *CMNSpec) params(ws *engine.Workspace, w, h int, np *imaging.NormalizeParams) error {
	cw, ch := s.CropW, s.CropH
	if s.dynCrop {
		var err error
		if cw, ch, err = cropSizeAt(s.args, ws); err != nil {
			return err
		}
	}
	mean, std := s.Mean, s.Std
	if s.dynNorm {
		var err error
		if mean, std, err = s.normAt(ws); err != nil {
			return err
		}
	}
	if cw == 0 {
		cw, ch = w, h
	}
	mirror, err := s.args.BoolAt(ws, "mirror")
	if err != nil {
		return err
	}
	x, y, err := cropPosAt(s.args, ws, w, h, cw, ch, s.rounding)
	if err != nil {
		return err
	}
	if !s.PadOutOfBounds && (x < 0 || y < 0 || x+cw > w || y+ch > h) {
		return s.args.DataErrorf(ws, "crop %dx%d at (%d, %d) leaves the %dx%d image (out_of_bounds_policy=\"error\"; use \"pad\")", cw, ch, x, y, w, h)
	}
	*np = imaging.NormalizeParams{Mean: mean, Std: std, Scale: s.Scale, Shift: s.Shift, Out: s.Out,
		CHW: s.CHW, PadChannels: s.Pad, Mirror: mirror, CropX: x, CropY: y, CropW: cw, CropH: ch}
	return nil
}

// normAt reads this sample's mean and std (either may be constant) and checks them
// against the sample's channel count.
func (s *CMNSpec) normAt(ws *engine.Workspace) ([]float32, []float32, error) {
	a := s.args
	c := 0
	if in := ws.In[0]; len(in.Shape) == 3 {
		c = in.Shape[2]
	}
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
	} else {
		t.SetShape(ch, cw, oc)
	}
}

type cmnOp struct{ spec *CMNSpec }

type cmnState struct{ np imaging.NormalizeParams }

func (o *cmnOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) { return o.spec.meta(in[0]) }
func (o *cmnOp) NewWorkerState() any                                       { return &cmnState{} }

func (o *cmnOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*cmnState)
	in := ws.In[0]
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
	return imaging.CropMirrorNormalize(ws.Out[0].Data, in.Data, in.Shape[1], in.Shape[0], in.Shape[2], &st.np)
}

// Fuse absorbs a resize: the fused operator resamples straight into the normalized,
// cropped, mirrored output.
func (o *cmnOp) Fuse(p engine.Operator) (engine.Operator, bool) {
	r, ok := p.(*resizeOp)
	if !ok || r.dynamic {
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
	st.ow, st.oh = spec.OutputSize(st.roi[2]-st.roi[0], st.roi[3]-st.roi[1])
	if st.ow == 0 {
		return o.resize.args.DataErrorf(ws, "empty input region %v of a %dx%d image", st.roi, w, h)
	}
	if err := o.cmn.spec.params(ws, st.ow, st.oh, &st.np); err != nil {
		return err
	}
	o.cmn.spec.setShape(ws.Out[0], st.np.CropW, st.np.CropH, c)
	return nil
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
