package image

import (
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "rotate",
		Doc: "Rotates HWC uint8 images counter-clockwise by angle degrees about their centre, as " +
			"DALI does: by default the output is the rotated image's bounding box (rounded up, with " +
			"the parity of the input's sides kept to avoid half-pixel blur); keep_size keeps the " +
			"input size, size sets it. Pixels from outside the input are fill_value, or the nearest " +
			"edge pixel when fill_value is not given. angle may come per sample.",
		Sequences: engine.PerFrame,
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "angle", Type: engine.ArgFloat, Required: true, TensorInput: true, Doc: "rotation in degrees, counter-clockwise (top-left origin)"},
			{Name: "keep_size", Type: engine.ArgBool, Default: false, Doc: "keep the input's size (corners are cut)"},
			{Name: "size", Type: engine.ArgFloatList, TensorInput: true, Doc: "output size (height, width), rounded to whole pixels; exclusive with keep_size; may come per sample"},
			{Name: "fill_value", Type: engine.ArgFloat, Doc: "value of pixels from outside the input (0..255); default: repeat the edge"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: "INTERP_LINEAR or INTERP_NN"},
			{Name: "dtype", Type: engine.ArgDType, Default: "UINT8", Doc: "output type (only UINT8)"},
		},
	})
	engine.RegisterBackend("rotate", "cpu", func(a *engine.Args) (engine.Operator, error) { return newRotate(a) })
}

type rotateOp struct {
	args    *engine.Args
	keep    bool
	w, h    int // explicit size, 0 if none
	interp  imaging.Interp
	useFill bool
	fill    byte
}

type rotateState struct {
	warp imaging.Warp
	size []float64
	seq  seqSize // the sequence's common frame size (SizeFrame), 0 outside sequences
}

// seqSize gathers the frames' sizes of a sequence rotated by per-frame angles: DALI gives
// every frame one size, per side the largest bounding box (before the parity correction),
// made odd or even as most frames' corrected sides are.
type seqSize struct {
	w, h       int // the result, set at the last frame
	maxW, maxH int
	oddW, oddH int
}

func newRotate(a *engine.Args) (*rotateOp, error) {
	o := &rotateOp{args: a, keep: a.Bool("keep_size")}
	if a.DType("dtype") != engine.UInt8 {
		return nil, a.Errorf("dtype", "only UINT8 is supported, got %s", a.DType("dtype"))
	}
	if !a.AnyPerSample("angle") {
		if v := a.Float("angle"); math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, a.Errorf("angle", "expected a finite number of degrees, got %g", v)
		}
	}
	if a.GivenConstant("size") && o.keep {
		return nil, a.Errorf("size", "give size or keep_size, not both")
	}
	if a.GivenConstant("size") && !a.AnyPerSample("size") {
		if o.keep {
			return nil, a.Errorf("size", "give size or keep_size, not both")
		}
		s, err := a.FloatPair("size")
		if err != nil {
			return nil, err
		}
		if !(s[0] >= 0.5 && s[1] >= 0.5) || s[0] > 1<<20 || s[1] > 1<<20 {
			return nil, a.Errorf("size", "expected (height, width) of at least 1 pixel, got %v", a.Floats("size"))
		}
		o.h, o.w = int(math.Round(s[0])), int(math.Round(s[1]))
	}
	var err error
	o.interp, o.useFill, o.fill, err = warpSampling(a, "rotate")
	if err != nil {
		return nil, err
	}
	return o, nil
}

func (o *rotateOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	c := in[0].Shape[2]
	shape := []int{-1, -1, c}
	switch {
	case o.w > 0:
		shape = []int{o.h, o.w, c}
	case o.args.AnyPerSample("size"):
	case o.keep:
		shape = []int{in[0].Shape[0], in[0].Shape[1], c}
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "HWC", Shape: shape}}, nil
}

func (o *rotateOp) NewWorkerState() any { return &rotateState{} }

// angle reads the sample's (or frame's) angle in radians.
func (o *rotateOp) angle(ws *engine.Workspace) (float64, error) {
	deg, err := o.args.FloatAt(ws, "angle")
	if err != nil {
		return 0, err
	}
	if math.IsNaN(deg) || math.IsInf(deg, 0) {
		return 0, o.args.ArgDataErrorf(ws, "angle", "expected a finite number of degrees, got %g", deg)
	}
	return deg * math.Pi / 180, nil
}

// SizeFrame gathers frame f of n of a sequence (engine.FrameSizer): frames rotated by
// different angles get one size.
func (o *rotateOp) SizeFrame(ws *engine.Workspace, f, n int) error {
	st := ws.State.(*rotateState)
	q := &st.seq
	if f == 0 {
		*q = seqSize{}
	}
	if o.keep || o.w > 0 || o.args.AnyPerSample("size") {
		return nil
	}
	rad, err := o.angle(ws)
	if err != nil {
		return err
	}
	in := ws.In[0]
	bw, bh := imaging.RotatedBox(in.Shape[1], in.Shape[0], rad)
	cw, ch := imaging.RotatedSize(in.Shape[1], in.Shape[0], rad)
	q.maxW, q.maxH = max(q.maxW, bw), max(q.maxH, bh)
	q.oddW += cw % 2
	q.oddH += ch % 2
	if f == n-1 {
		q.w, q.h = q.maxW, q.maxH
		if (q.w%2 == 1) != (2*q.oddW > n) {
			q.w++
		}
		if (q.h%2 == 1) != (2*q.oddH > n) {
			q.h++
		}
	}
	return nil
}

func (o *rotateOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*rotateState)
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	rad, err := o.angle(ws)
	if err != nil {
		return err
	}
	ow, oh := w, h
	switch {
	case o.w > 0:
		ow, oh = o.w, o.h
	case o.args.AnyPerSample("size"):
		if st.size, err = o.args.FloatsAt(ws, "size", st.size); err != nil {
			return err
		}
		s := st.size
		if len(s) != 2 || !(s[0] >= 0.5 && s[1] >= 0.5) || s[0] > 1<<20 || s[1] > 1<<20 {
			return o.args.ArgDataErrorf(ws, "size", "expected (height, width) of at least 1 pixel, got %v", s)
		}
		ow, oh = int(math.Round(s[1])), int(math.Round(s[0]))
	case o.keep:
	case st.seq.w > 0:
		ow, oh = st.seq.w, st.seq.h
	default:
		ow, oh = imaging.RotatedSize(w, h, rad)
	}
	if lim := ws.Limits; lim != nil && lim.MaxImagePixels > 0 && int64(ow)*int64(oh) > lim.MaxImagePixels {
		return o.args.DataErrorf(ws, "output of %dx%d pixels exceeds max_image_pixels (%d)", ow, oh, lim.MaxImagePixels)
	}
	// Output to input, about the centres: with y pointing down, [[cos, -sin], [sin, cos]]
	// takes an output point to the input point that a counter-clockwise (on screen)
	// rotation moved there.
	cs, sn := math.Cos(rad), math.Sin(rad)
	cx, cy := float64(ow)/2, float64(oh)/2
	ix, iy := float64(w)/2, float64(h)/2
	st.warp = imaging.Warp{
		M: [2][3]float64{
			{cs, -sn, ix - cs*cx + sn*cy},
			{sn, cs, iy - sn*cx - cs*cy},
		},
		Interp: o.interp, UseFill: o.useFill, Fill: o.fill,
	}
	ws.Out[0].SetShape(oh, ow, c)
	return nil
}

func (o *rotateOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*rotateState)
	in, out := ws.In[0], ws.Out[0]
	return st.warp.Apply(out.Data, out.Shape[1], out.Shape[0], in.Data, in.Shape[1], in.Shape[0], in.Shape[2])
}

// warpSampling parses the interp_type and fill_value arguments shared by the warping
// operators (rotate, warp_affine, the auto-augment geometry): LINEAR or NN, and an
// optional uint8 fill (without one, edges repeat).
func warpSampling(a *engine.Args, op string) (interp imaging.Interp, useFill bool, fill uint8, err error) {
	switch a.String("interp_type") {
	case "NN":
		interp = imaging.InterpNN
	case "LINEAR":
		interp = imaging.InterpLinear
	default:
		return 0, false, 0, a.Errorf("interp_type", "%s supports INTERP_LINEAR and INTERP_NN, got INTERP_%s", op, a.String("interp_type"))
	}
	if a.GivenConstant("fill_value") {
		f := a.Float("fill_value")
		if !(f >= 0 && f <= 255) {
			return 0, false, 0, a.Errorf("fill_value", "expected a value in [0, 255] for UINT8 images, got %g", f)
		}
		useFill, fill = true, imaging.SatU8(float32(f))
	}
	return interp, useFill, fill, nil
}
