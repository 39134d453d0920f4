package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "color_twist",
		Doc: "Adjusts hue, saturation, brightness and contrast of RGB images (HWC, FHWC, DHWC; UINT8, " +
			"INT16, INT32 or FLOAT) as DALI does: hsv's YIQ transform, then out = brightness * " +
			"(contrast * x + grey * (1 - contrast)), grey 128 for integer and 0.5 for float input. " +
			"Arguments may come per sample.",
		Sequences: engine.PerFrame, Volumetric: true,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: bcLayouts, InputDtypes: bcTypes, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "brightness", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "brightness factor (>= 0): 0 black, 1 unchanged, 2 twice as bright"},
			{Name: "contrast", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "contrast factor (>= 0): 0 uniform grey, 1 unchanged"},
			{Name: "hue", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "hue change, in degrees"},
			{Name: "saturation", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "saturation factor (>= 0): 0 grey, 1 unchanged"},
			{Name: "image_type", Type: engine.ArgImageType, Default: "RGB", Doc: "color space of the input and output: RGB or BGR"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: UINT8, INT16, INT32 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("color_twist", "cpu", func(a *engine.Args) (engine.Operator, error) { return newColorTwist(a, true) })
}

// colorTwistOp is hsv (twist false) and color_twist (twist true); hue and saturation
// are hsv with the other arguments neutral.
type colorTwistOp struct {
	args         *engine.Args
	twist        bool
	bgr          bool
	params       []colorArg // hue, saturation, value | brightness, contrast
	out, in      engine.DType
	outFromInput bool // no dtype given: the input's type (known at Infer)
}

type colorTwistState struct {
	m imaging.ColorMatrix
	v [5]float64
}

func newColorTwist(a *engine.Args, twist bool) (*colorTwistOp, error) {
	o := &colorTwistOp{args: a, twist: twist, out: engine.UInt8, in: engine.UInt8,
		outFromInput: !a.Has("dtype") && a.String("dtype") == ""}
	if !o.outFromInput {
		o.out = a.DType("dtype")
		if !bcType(o.out) {
			return nil, a.Errorf("dtype", "expected UINT8, INT16, INT32 or FLOAT, got %s", o.out)
		}
	}
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
	var err error
	if o.params, err = colorConstArgs(a, names, nonNeg); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *colorTwistOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if c := m.Shape[len(m.Shape)-1]; c != 3 && c >= 0 {
		return nil, o.args.Invalidf("input must have 3 channels (RGB), got %d; decode with output_type=RGB", c)
	}
	o.in = m.DType
	if o.outFromInput {
		o.out = m.DType
	}
	return []engine.TensorMeta{{DType: o.out, Layout: colorLayout(m), Shape: m.Shape}}, nil
}

func (o *colorTwistOp) NewWorkerState() any { return &colorTwistState{} }

func (o *colorTwistOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	if len(in.Shape) == 0 || in.Shape[len(in.Shape)-1] != 3 {
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
	pixels := 1
	for _, d := range in.Shape[:len(in.Shape)-1] {
		pixels *= d
	}
	if o.in == engine.UInt8 && (o.out == engine.UInt8 || o.out == engine.Float32) {
		imOut := imaging.UInt8
		if o.out == engine.Float32 {
			imOut = imaging.Float32
		}
		return st.m.Apply(ws.Out[0].Data, in.Data, pixels, imOut)
	}
	m := &st.m
	dst, src := ws.Out[0].Data, in.Data
	for p := 0; p < 3*pixels; p += 3 {
		r, g, b := loadF32(src, p, o.in), loadF32(src, p+1, o.in), loadF32(src, p+2, o.in)
		for c := 0; c < 3; c++ {
			// The same float32 order of operations as imaging.ColorMatrix.Apply.
			f := float32(m.M[c][0]*r) + float32(m.M[c][1]*g) // no FMA, as in imaging
			f = float32(f) + float32(m.M[c][2]*b)
			f = float32(f) + m.Off[c]
			storeSat(dst, p+c, f, o.out)
		}
	}
	return nil
}

// grey is the level color_twist's contrast keeps: 128 for integer input, 0.5 for float.
func (o *colorTwistOp) grey() float64 {
	if o.in == engine.Float32 {
		return 0.5
	}
	return uint8HalfRange
}

// matrix sets cm to the transform of a sample's arguments v (the gpu backend uses it too).
func (o *colorTwistOp) matrix(v []float64, cm *imaging.ColorMatrix) {
	if o.twist {
		cm.SetHSV(v[0], v[1], 1, v[2], v[3], o.grey())
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
