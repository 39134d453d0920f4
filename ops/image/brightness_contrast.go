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
		Doc: "Adjusts the brightness and contrast of images (HWC, FHWC sequences, DHWC volumes; " +
			"element-wise): out = brightness_shift * output_range + brightness * " +
			"(contrast_center + contrast * (in - contrast_center)), where output_range is the output " +
			"type's maximum (255 UINT8, 32767 INT16, 2^31-1 INT32) and 1 for FLOAT; computed in " +
			"float32, integers rounded to nearest and saturated, as in DALI. Inputs UINT8, INT16, " +
			"INT32 or FLOAT. Every argument may come per sample (e.g. from random.uniform).",
		Sequences: engine.PerFrame, Volumetric: true,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: bcLayouts, InputDtypes: bcTypes,
		Args: []engine.ArgSpec{
			{Name: "brightness", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "brightness multiplier"},
			{Name: "brightness_shift", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "brightness shift, in units of the output range (1.0 = 255 for UINT8)"},
			{Name: "contrast", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "contrast multiplier; 0 gives a uniform grey"},
			{Name: "contrast_center", Type: engine.ArgFloat, TensorInput: true, Doc: "the input level contrast leaves unchanged; default half of the input type's range (128 for UINT8, 16384 for INT16, 0.5 for FLOAT)"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: UINT8, INT16, INT32 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("brightness_contrast", "cpu", func(a *engine.Args) (engine.Operator, error) { return newBrightnessContrast(a) })

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

// bcTypes are the element types brightness_contrast (and brightness, contrast) takes and
// gives, as DALI's.
var bcTypes = []engine.DType{engine.UInt8, engine.Int16, engine.Int32, engine.Float32}

// bcLayouts are DALI's input layouts of brightness_contrast; an input without a layout
// takes the first of them with its number of dimensions (HWC, or FHWC for 4-D), as DALI's.
var bcLayouts = []string{"FHWC", "DHWC", "HWC"}

type brightnessContrastOp struct {
	args   *engine.Args
	params []colorArg // brightness, brightness_shift, contrast, contrast_center
	out    engine.DType
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
	params, err := colorConstArgs(a, []string{"brightness", "brightness_shift", "contrast", "contrast_center"}, nil)
	if err != nil {
		return nil, err
	}
	o := &brightnessContrastOp{args: a, params: params, out: engine.UInt8, in: engine.UInt8,
		outFromInput: !a.Has("dtype") && a.String("dtype") == ""}
	if !o.outFromInput {
		o.out = a.DType("dtype")
		if !bcType(o.out) {
			return nil, a.Errorf("dtype", "expected UINT8, INT16, INT32 or FLOAT, got %s", o.out)
		}
	}
	if !a.Has("contrast_center") {
		if !a.AnyPerSample("contrast_center") {
			o.centerFromInput = true
			params[3].constant = uint8HalfRange
		}
	}
	return o, nil
}

func bcType(d engine.DType) bool {
	for _, t := range bcTypes {
		if t == d {
			return true
		}
	}
	return false
}

// bcRange is DALI's output range of a type: its maximum, 1 for floating point.
func bcRange(d engine.DType) float32 {
	switch d {
	case engine.UInt8:
		return 255
	case engine.Int16:
		return 32767
	case engine.Int32:
		return 2147483647
	}
	return 1
}

// bcHalfRange is the default contrast_center of an input type: half its positive range
// (2^(bits-1) for integers, as DALI's 128 for uint8), 0.5 for floating point.
func bcHalfRange(d engine.DType) float64 {
	switch d {
	case engine.UInt8:
		return uint8HalfRange
	case engine.Int16:
		return 1 << 14
	case engine.Int32:
		return 1 << 30
	}
	return 0.5
}

// Infer accepts HWC images, FHWC sequences (the engine runs them frame by frame, for
// per_frame arguments) and DHWC volumes; the operator is element-wise.
// colorLayout is the layout of a colour operator's output: the input's, or for an input
// without one the layout of bcLayouts with its number of dimensions.
func colorLayout(m engine.TensorMeta) string {
	if m.Layout != "" {
		return m.Layout
	}
	for _, l := range bcLayouts {
		if len(l) == len(m.Shape) {
			return l
		}
	}
	return ""
}

func (o *brightnessContrastOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	o.in = m.DType
	if o.outFromInput {
		o.out = m.DType
	}
	if o.centerFromInput {
		o.params[3].constant = bcHalfRange(m.DType)
	}
	return []engine.TensorMeta{{DType: o.out, Layout: colorLayout(m), Shape: m.Shape}}, nil
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
	if o.in == engine.UInt8 && (o.out == engine.UInt8 || o.out == engine.Float32) {
		imOut := imaging.UInt8
		if o.out == engine.Float32 {
			imOut = imaging.Float32
		}
		if err := st.table.Init(scale, offset, imOut); err != nil {
			return err
		}
		return st.table.Apply(ws.Out[0].Data, ws.In[0].Data)
	}
	return affineElements(ws.Out[0].Data, ws.In[0].Data, o.in, o.out, scale, offset)
}

// affineElements maps src (of type in) to dst (of type out) with x * scale + offset in
// float32, integers rounded to nearest (halves away from zero, as the uint8 table) and
// saturated.
func affineElements(dst, src []byte, in, out engine.DType, scale, offset float32) error {
	n := len(src) / in.Size()
	if len(dst) < n*out.Size() {
		return fmt.Errorf("brightness_contrast: output has %d bytes, expected %d", len(dst), n*out.Size())
	}
	for i := 0; i < n; i++ {
		storeSat(dst, i, float32(loadF32(src, i, in)*scale)+offset, out) // no FMA, as in the table
	}
	return nil
}

// loadF32 is element i of src (of type d) as float32.
func loadF32(src []byte, i int, d engine.DType) float32 {
	switch d {
	case engine.UInt8:
		return float32(src[i])
	case engine.Int16:
		return float32(int16(binary.LittleEndian.Uint16(src[2*i:])))
	case engine.Int32:
		return float32(int32(binary.LittleEndian.Uint32(src[4*i:])))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
}

// storeSat writes f as element i of dst (of type d): integers rounded to nearest (halves
// away from zero) and saturated, floats as they are.
func storeSat(dst []byte, i int, f float32, d engine.DType) {
	switch d {
	case engine.UInt8:
		dst[i] = imaging.SatU8(f)
	case engine.Int16:
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(int16(satRound(f, -32768, 32767))))
	case engine.Int32:
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(int32(satRound(f, -2147483648, 2147483647))))
	default:
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
	}
}

// satRound rounds f to the nearest integer (halves away from zero) within [lo, hi]; NaN
// gives 0.
func satRound(f float32, lo, hi float64) int64 {
	v := float64(f)
	switch {
	case v != v:
		return 0
	case v <= lo:
		return int64(lo)
	case v >= hi:
		return int64(hi)
	}
	return int64(math.Round(v))
}

// affine turns a sample's brightness, brightness_shift, contrast and contrast_center
// into out = in * scale + offset, in float32 (the gpu backend uses it too).
func (o *brightnessContrastOp) affine(v []float64) (scale, offset float32) {
	brightness, shift, contrast, center := float32(v[0]), float32(v[1]), float32(v[2]), float32(v[3])
	outRange := bcRange(o.out)
	// out = shift*range + brightness*(center + contrast*(in - center)), as in * scale + offset.
	scale = brightness * contrast
	offset = float32(shift*outRange) + float32(brightness*float32(center-float32(contrast*center)))
	return scale, offset
}
