package image

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// uint8HalfRange is the neutral grey of uint8 images that DALI's contrast keeps fixed
// (half of the type's range, rounded up as DALI does: 128, not 127.5).
const uint8HalfRange = 128

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "brightness_contrast",
		Doc: "Adjusts the brightness and contrast of HWC uint8 or float images: out = brightness_shift * " +
			"output_range + brightness * (contrast_center + contrast * (in - contrast_center)), " +
			"where output_range is 255 for UINT8 and 1 for FLOAT outputs; computed in float32, UINT8 " +
			"rounded to nearest and saturated, as in DALI. Every argument may come per sample " +
			"(e.g. from random.uniform).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8OrFloat,
		Args: []engine.ArgSpec{
			{Name: "brightness", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "brightness multiplier"},
			{Name: "brightness_shift", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "brightness shift, in units of the output range (1.0 = 255 for UINT8)"},
			{Name: "contrast", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "contrast multiplier; 0 gives a uniform grey"},
			{Name: "contrast_center", Type: engine.ArgFloat, TensorInput: true, Doc: "the input level contrast leaves unchanged; default half of the input range (128 for uint8, 0.5 for float)"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type, UINT8 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("brightness_contrast", "cpu", func(a *engine.Args) (engine.Operator, error) { return newBrightnessContrast(a) })

	engine.RegisterSchema(&engine.Schema{
		Name: "hsv",
		Doc: "Adjusts hue, saturation and value of HWC uint8 RGB images the way DALI does: a linear " +
			"transform in YIQ space (rotate the chroma by hue degrees, scale it by saturation, scale " +
			"all by value), applied as one 3x3 matrix in float32. Arguments may come per sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "hue", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "hue change, in degrees (additive; wraps around)"},
			{Name: "saturation", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "saturation multiplier"},
			{Name: "value", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "value (brightness) multiplier"},
			{Name: "dtype", Type: engine.ArgDType, Default: "UINT8", Doc: "output type, UINT8 or FLOAT"},
		},
	})
	engine.RegisterBackend("hsv", "cpu", func(a *engine.Args) (engine.Operator, error) { return newColorTwist(a, false) })

	engine.RegisterSchema(&engine.Schema{
		Name: "color_twist",
		Doc: "Adjusts hue, saturation, brightness and contrast of HWC uint8 images as DALI does: " +
			"hsv's YIQ transform, then out = brightness * (contrast * x + 128 * (1 - contrast)). " +
			"Arguments may come per sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "brightness", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "brightness factor (>= 0): 0 black, 1 unchanged, 2 twice as bright"},
			{Name: "contrast", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "contrast factor (>= 0): 0 uniform grey, 1 unchanged"},
			{Name: "hue", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "hue change, in degrees"},
			{Name: "saturation", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "saturation factor (>= 0): 0 grey, 1 unchanged"},
			{Name: "image_type", Type: engine.ArgImageType, Default: "RGB", Doc: "color space of the input and output: RGB or BGR"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type, UINT8 or FLOAT; default the input's (UINT8)"},
		},
	})
	engine.RegisterBackend("color_twist", "cpu", func(a *engine.Args) (engine.Operator, error) { return newColorTwist(a, true) })
}

// colorOutType parses the dtype of the color operators: UINT8 (the input's type, the
// default) or FLOAT.
func colorOutType(a *engine.Args) (engine.DType, imaging.DType, error) {
	if !a.Has("dtype") && a.String("dtype") == "" {
		return engine.UInt8, imaging.UInt8, nil
	}
	switch d := a.DType("dtype"); d {
	case engine.UInt8:
		return engine.UInt8, imaging.UInt8, nil
	case engine.Float32:
		return engine.Float32, imaging.Float32, nil
	default:
		return 0, 0, a.Errorf("dtype", "expected UINT8 or FLOAT, got %s", d)
	}
}

// colorArg is one scalar argument of a color operator: its constant, or its arg input.
type colorArg struct {
	name     string
	constant float64
	nonNeg   bool // DALI requires >= 0
}

// sampleArgs reads the arguments' values for the current sample into v.
func sampleArgs(ws *engine.Workspace, a *engine.Args, args []colorArg, v []float64) error {
	for i, c := range args {
		x := c.constant
		if a.AnyPerSample(c.name) {
			var err error
			if x, err = a.FloatAt(ws, c.name); err != nil {
				return err
			}
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || (c.nonNeg && x < 0) {
			want := "a finite number"
			if c.nonNeg {
				want = "a finite number >= 0"
			}
			return a.ArgDataErrorf(ws, c.name, "expected %s, got %g", want, x)
		}
		v[i] = x
	}
	return nil
}

// colorConstArgs checks the constant arguments at build time.
func colorConstArgs(a *engine.Args, names []string, nonNeg map[string]bool) ([]colorArg, error) {
	out := make([]colorArg, len(names))
	for i, n := range names {
		v := a.Float(n)
		if !a.AnyPerSample(n) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, a.Errorf(n, "expected a finite number, got %g", v)
			}
			if nonNeg[n] && v < 0 {
				return nil, a.Errorf(n, "must be >= 0, got %g", v)
			}
		}
		out[i] = colorArg{name: n, constant: v, nonNeg: nonNeg[n]}
	}
	return out, nil
}

type brightnessContrastOp struct {
	args   *engine.Args
	params []colorArg // brightness, brightness_shift, contrast, contrast_center
	out    engine.DType
	imOut  imaging.DType
	// outFromInput: no dtype given, the output takes the input's type (known at Infer);
	// centerFromInput: no contrast_center given, half the input's range (set at Infer).
	outFromInput, centerFromInput bool
	in                            engine.DType
}

type brightnessContrastState struct {
	table imaging.AffineTable
	v     [4]float64
}

func newBrightnessContrast(a *engine.Args) (*brightnessContrastOp, error) {
	out, imOut, err := colorOutType(a)
	if err != nil {
		return nil, err
	}
	params, err := colorConstArgs(a, []string{"brightness", "brightness_shift", "contrast", "contrast_center"}, nil)
	if err != nil {
		return nil, err
	}
	o := &brightnessContrastOp{args: a, params: params, out: out, imOut: imOut, in: engine.UInt8,
		outFromInput: !a.Has("dtype") && a.String("dtype") == ""}
	if !a.Has("contrast_center") {
		if !a.AnyPerSample("contrast_center") {
			o.centerFromInput = true
			params[3].constant = uint8HalfRange
		}
	}
	return o, nil
}

// Infer accepts HWC uint8 or float images (e.g. hsv's FLOAT output), as DALI does.
func (o *brightnessContrastOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	o.in = m.DType
	if o.outFromInput && m.DType == engine.Float32 {
		o.out, o.imOut = engine.Float32, imaging.Float32
	}
	if o.centerFromInput && m.DType == engine.Float32 {
		o.params[3].constant = 0.5
	}
	return []engine.TensorMeta{{DType: o.out, Layout: "HWC", Shape: []int{m.Shape[0], m.Shape[1], m.Shape[2]}}}, nil
}

func (o *brightnessContrastOp) NewWorkerState() any { return &brightnessContrastState{} }

func (o *brightnessContrastOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *brightnessContrastOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*brightnessContrastState)
	if err := sampleArgs(ws, o.args, o.params, st.v[:]); err != nil {
		return err
	}
	scale, offset := o.affine(st.v[:])
	if o.in == engine.Float32 {
		return affineFloat(ws.Out[0].Data, ws.In[0].Data, scale, offset, o.out)
	}
	if err := st.table.Init(scale, offset, o.imOut); err != nil {
		return err
	}
	return st.table.Apply(ws.Out[0].Data, ws.In[0].Data)
}

// affineFloat maps float32 src to dst (float32, or uint8 rounded and saturated) with
// in * scale + offset, rounded as the uint8 table is.
func affineFloat(dst, src []byte, scale, offset float32, out engine.DType) error {
	n := len(src) / 4
	if len(dst) < n*out.Size() {
		return fmt.Errorf("brightness_contrast: output has %d bytes, expected %d", len(dst), n*out.Size())
	}
	for i := 0; i < n; i++ {
		x := math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		f := float32(x*scale) + offset // no FMA, as in the table
		if out == engine.UInt8 {
			dst[i] = imaging.SatU8(f)
		} else {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
		}
	}
	return nil
}

// affine turns a sample's brightness, brightness_shift, contrast and contrast_center
// into out = in * scale + offset, in float32 (the gpu backend uses it too).
func (o *brightnessContrastOp) affine(v []float64) (scale, offset float32) {
	brightness, shift, contrast, center := float32(v[0]), float32(v[1]), float32(v[2]), float32(v[3])
	outRange := float32(255)
	if o.out == engine.Float32 {
		outRange = 1
	}
	// out = shift*range + brightness*(center + contrast*(in - center)), as in * scale + offset.
	scale = brightness * contrast
	offset = float32(shift*outRange) + float32(brightness*float32(center-float32(contrast*center)))
	return scale, offset
}

// colorTwistOp is hsv (twist false) and color_twist (twist true).
type colorTwistOp struct {
	args   *engine.Args
	twist  bool
	bgr    bool
	params []colorArg // hue, saturation, value | brightness, contrast
	out    engine.DType
	imOut  imaging.DType
}

type colorTwistState struct {
	m imaging.ColorMatrix
	v [5]float64
}

func newColorTwist(a *engine.Args, twist bool) (*colorTwistOp, error) {
	out, imOut, err := colorOutType(a)
	if err != nil {
		return nil, err
	}
	o := &colorTwistOp{args: a, twist: twist, out: out, imOut: imOut}
	names := []string{"hue", "saturation", "value"}
	nonNeg := map[string]bool{}
	if twist {
		names = []string{"hue", "saturation", "brightness", "contrast"}
		nonNeg = map[string]bool{"saturation": true, "brightness": true, "contrast": true}
		switch a.String("image_type") {
		case "RGB":
		case "BGR":
			o.bgr = true
		default:
			return nil, a.Errorf("image_type", "expected RGB or BGR (3-channel color), got %s", a.String("image_type"))
		}
	}
	if o.params, err = colorConstArgs(a, names, nonNeg); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *colorTwistOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	c := in[0].Shape[2]
	if c != 3 && c >= 0 {
		return nil, o.args.Invalidf("input must have 3 channels (RGB), got %d; decode with output_type=RGB", c)
	}
	return []engine.TensorMeta{{DType: o.out, Layout: "HWC", Shape: []int{in[0].Shape[0], in[0].Shape[1], 3}}}, nil
}

func (o *colorTwistOp) NewWorkerState() any { return &colorTwistState{} }

func (o *colorTwistOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	if in.Shape[2] != 3 {
		return o.args.DataErrorf(ws, "input must have 3 channels (RGB), got shape %v", in.Shape)
	}
	ws.Out[0].SetShape(in.Shape...)
	return nil
}

func (o *colorTwistOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*colorTwistState)
	v := st.v[:len(o.params)]
	if err := sampleArgs(ws, o.args, o.params, v); err != nil {
		return err
	}
	o.matrix(v, &st.m)
	in := ws.In[0]
	return st.m.Apply(ws.Out[0].Data, in.Data, in.Shape[0]*in.Shape[1], o.imOut)
}

// matrix sets cm to the transform of a sample's arguments v (the gpu backend uses it too).
func (o *colorTwistOp) matrix(v []float64, cm *imaging.ColorMatrix) {
	if o.twist {
		cm.SetHSV(v[0], v[1], 1, v[2], v[3], uint8HalfRange)
	} else {
		cm.SetHSV(v[0], v[1], v[2], 1, 1, 0)
	}
	if o.bgr {
		// The same transform with the first and last channels swapped on both sides.
		m := &cm.M
		m[0], m[2] = m[2], m[0]
		for i := range m {
			m[i][0], m[i][2] = m[i][2], m[i][0]
		}
	}
}
