package image

import (
	"fmt"
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "experimental.warp_perspective",
		Doc: "Applies a perspective transform (a 3x3 homography) to images, as DALI's CPU " +
			"experimental.warp_perspective (OpenCV's warpPerspective): with inverse_map (the default) the matrix " +
			"maps output points to the input points they show, otherwise input to output. pixel_origin \"corner\" " +
			"(the default) puts (0, 0) at the top-left corner of the first pixel, \"center\" at its centre (OpenCV's " +
			"convention). The matrix is the matrix argument (9 numbers, row-major; may come per sample) or input 1 " +
			"(a 3x3 FLOAT tensor per sample). HW, HWC, CHW, FHWC or FCHW (every frame with the sample's matrix); UINT8, INT16, " +
			"UINT16 or FLOAT, output of the input's type.",
		MinInputs: 1, MaxInputs: 2, Outputs: []string{"output"}, HostOnly: true,
		InputLayouts: []string{"HW", "HWC", "CHW", "FHWC", "FCHW"},
		InputDtypes:  []engine.DType{engine.UInt8, engine.Int16, engine.UInt16, engine.Float32},
		Args: []engine.ArgSpec{
			{Name: "matrix", Type: engine.ArgFloatList, TensorInput: true, Doc: "the 3x3 transform, row-major (9 numbers); may come per sample; or give input 1"},
			{Name: "size", Type: engine.ArgFloatList, TensorInput: true, Doc: "output (height, width), rounded, at least 1; default the input's; may come per sample"},
			{Name: "inverse_map", Type: engine.ArgBool, Default: true, Doc: "the matrix maps output to input (true) or input to output (false)"},
			{Name: "border_mode", Type: engine.ArgString, Default: "constant", Doc: "reading outside the input: constant (fill_value), replicate, reflect, reflect_101 or wrap"},
			{Name: "fill_value", Type: engine.ArgFloatList, Doc: "with border_mode=\"constant\": one value, or one per channel (default 0)"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: "INTERP_NN, INTERP_LINEAR or INTERP_CUBIC"},
			{Name: "pixel_origin", Type: engine.ArgString, Default: "corner", Doc: "\"corner\": (0, 0) is the top-left corner of the first pixel; \"center\": its centre (OpenCV)"},
		},
	})
	engine.RegisterBackend("experimental.warp_perspective", "cpu", newWarpPerspective)
}

var perspectiveBorders = map[string]imaging.Border{
	"constant": imaging.BorderConstant, "replicate": imaging.BorderClamp, "reflect": imaging.BorderReflect1001,
	"reflect_101": imaging.BorderReflect101, "wrap": imaging.BorderWrap,
}

type warpPerspectiveOp struct {
	args    *engine.Args
	p       imaging.Perspective // Interp, Border, Fill
	inverse bool
	corner  bool
}

func newWarpPerspective(a *engine.Args) (engine.Operator, error) {
	o := &warpPerspectiveOp{args: a, inverse: a.Bool("inverse_map")}
	var ok bool
	if o.p.Border, ok = perspectiveBorders[a.String("border_mode")]; !ok {
		return nil, a.Errorf("border_mode", "Invalid border_mode argument: %q (expected constant, replicate, reflect, reflect_101 or wrap)", a.String("border_mode"))
	}
	var err error
	if o.p.Interp, err = nnLinearCubic(a, "interp_type", "warp_perspective"); err != nil {
		return nil, err
	}
	switch a.String("pixel_origin") {
	case "corner":
		o.corner = true
	case "center":
	default:
		return nil, a.Errorf("pixel_origin", "Invalid pixel_origin argument: %q (expected \"corner\" or \"center\")", a.String("pixel_origin"))
	}
	o.p.Fill = a.Floats("fill_value")
	if a.GivenConstant("matrix") && !a.AnyPerSample("matrix") {
		if err := checkMatrix9(a.Floats("matrix")); err != "" {
			return nil, a.Errorf("matrix", "%s", err)
		}
	}
	if err := a.CheckExtentArgs("size"); err != nil {
		return nil, err
	}
	if s := a.Floats("size"); a.GivenConstant("size") && !a.AnyPerSample("size") && len(s) != 2 {
		return nil, a.Errorf("size", "expected (height, width), got %v", s)
	}
	return o, nil
}

func checkMatrix9(m []float64) string {
	if len(m) != 9 {
		return fmt.Sprintf("expected 9 numbers (a 3x3 matrix, row-major), got %d", len(m))
	}
	for _, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "expected finite numbers"
		}
	}
	return ""
}

// perspectiveGeom is where a sample's frames, rows and channels are: hAxis is H (W
// follows), cAxis the channels (-1: none); planar layouts (CHW, FCHW) have C before H.
func perspectiveGeom(layout string, ndim int) (hAxis, cAxis int, planar bool) {
	switch {
	case layout == "CHW" || layout == "FCHW":
		return ndim - 2, ndim - 3, true
	case ndim == 4:
		return 1, 3, false
	case ndim == 3:
		return 0, 2, false
	}
	return 0, -1, false
}

func (o *warpPerspectiveOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	a := o.args
	if len(in) > 1 {
		if a.Given("matrix") {
			return nil, a.Errorf("matrix", "Matrix input and `matrix` argument should not be provided at the same time.")
		}
		if m := in[1]; m.DType != engine.Float32 || (m.Shape != nil && (len(m.Shape) != 2 || (m.Shape[0] >= 0 && m.Shape[0] != 3) || (m.Shape[1] >= 0 && m.Shape[1] != 3))) {
			return nil, a.Invalidf("input 1 (the matrix) must be a 3x3 FLOAT tensor per sample, got %s %v", m.DType, m.Shape)
		}
	} else if !a.Given("matrix") {
		return nil, a.Errorf("matrix", "give the 3x3 matrix: the matrix argument or input 1")
	}
	m := in[0]
	hAxis, c, _ := perspectiveGeom(m.Layout, len(m.Shape))
	if c >= 0 && m.Shape[c] >= 0 && len(o.p.Fill) > 1 && len(o.p.Fill) != m.Shape[c] {
		return nil, a.Errorf("fill_value", "Number of values provided as a fill_value should match the number of channels. Number of channels: %d. Number of values provided: %d.", m.Shape[c], len(o.p.Fill))
	}
	out := m
	out.Shape = append([]int(nil), m.Shape...)
	out.Shape[hAxis], out.Shape[hAxis+1] = -1, -1
	if !a.AnyPerSample("size") && a.GivenConstant("size") {
		s := a.Floats("size")
		out.Shape[hAxis], out.Shape[hAxis+1] = max(int(math.Round(s[0])), 1), max(int(math.Round(s[1])), 1)
	} else if !a.Given("size") {
		out.Shape[hAxis], out.Shape[hAxis+1] = m.Shape[hAxis], m.Shape[hAxis+1]
	}
	return []engine.TensorMeta{out}, nil
}

type warpPerspectiveState struct{ buf []float64 }

func (o *warpPerspectiveOp) NewWorkerState() any { return &warpPerspectiveState{} }

func (o *warpPerspectiveOp) Setup(ws *engine.Workspace) error {
	a := o.args
	in, out := ws.In[0], ws.Out[0]
	out.Layout = in.Layout
	out.SetShape(in.Shape...)
	hAxis, _, _ := perspectiveGeom(in.Layout, len(in.Shape))
	if a.Given("size") {
		s, err := a.FloatsAt(ws, "size", nil)
		if err != nil {
			return err
		}
		if err := a.CheckExtents(ws, "size", s...); err != nil {
			return err
		}
		if len(s) != 2 || s[0] > 1<<20 || s[1] > 1<<20 {
			return a.ArgDataErrorf(ws, "size", "expected (height, width) up to 2^20, got %v", s)
		}
		out.Shape[hAxis], out.Shape[hAxis+1] = max(int(math.Round(s[0])), 1), max(int(math.Round(s[1])), 1)
	}
	if lim := ws.Limits; lim != nil && lim.MaxImagePixels > 0 && int64(out.Shape[hAxis])*int64(out.Shape[hAxis+1]) > lim.MaxImagePixels {
		return a.DataErrorf(ws, "output of %dx%d pixels exceeds max_image_pixels (%d)", out.Shape[hAxis+1], out.Shape[hAxis], lim.MaxImagePixels)
	}
	return nil
}

// matrix is this sample's output -> input homography in OpenCV's (centre) coordinates.
func (o *warpPerspectiveOp) matrix(ws *engine.Workspace, st *warpPerspectiveState) ([3][3]float64, error) {
	a := o.args
	var m [3][3]float32
	if len(ws.In) > 1 {
		t := ws.In[1]
		if t.DType != engine.Float32 || len(t.Shape) != 2 || t.Shape[0] != 3 || t.Shape[1] != 3 {
			return [3][3]float64{}, a.DataErrorf(ws, "Expected a uniform list of 3x3 matrices. Instead got %s data with shape %v", t.DType, t.Shape)
		}
		for i := 0; i < 9; i++ {
			m[i/3][i%3] = float32(engine.ReadScalar(t.Data[4*i:], engine.Float32))
		}
	} else {
		v, err := a.FloatsAt(ws, "matrix", st.buf)
		if err != nil {
			return [3][3]float64{}, err
		}
		st.buf = v
		if msg := checkMatrix9(v); msg != "" {
			return [3][3]float64{}, a.ArgDataErrorf(ws, "matrix", "%s", msg)
		}
		for i := 0; i < 9; i++ {
			m[i/3][i%3] = float32(v[i])
		}
	}
	if o.corner {
		// DALI converts the corner-origin matrix to OpenCV's in float32:
		// shift(-0.5) * (m * shift(+0.5)).
		var b [3][3]float32
		for i := 0; i < 3; i++ {
			b[i][0], b[i][1] = m[i][0], m[i][1]
			b[i][2] = float32(float32(float32(m[i][0]*0.5)+float32(m[i][1]*0.5)) + m[i][2])
		}
		for j := 0; j < 3; j++ {
			m[0][j] = float32(b[0][j] + float32(-0.5*b[2][j]))
			m[1][j] = float32(b[1][j] + float32(-0.5*b[2][j]))
			m[2][j] = b[2][j]
		}
	}
	var d [3][3]float64
	for i := range m {
		for j := range m[i] {
			d[i][j] = float64(m[i][j])
		}
	}
	if !o.inverse {
		inv, ok := imaging.InvertHomography(d)
		if !ok && len(ws.In) > 1 {
			return d, a.DataErrorf(ws, "with inverse_map=False the matrix (input 1) must be invertible, got %v", m)
		} else if !ok {
			return d, a.ArgDataErrorf(ws, "matrix", "with inverse_map=False the matrix must be invertible, got %v", m)
		}
		d = inv
	}
	return d, nil
}

func (o *warpPerspectiveOp) Run(ws *engine.Workspace) error {
	a := o.args
	st := ws.State.(*warpPerspectiveState)
	in, out := ws.In[0], ws.Out[0]
	m, err := o.matrix(ws, st)
	if err != nil {
		return err
	}
	p := o.p
	p.M = m
	hAxis, cAxis, planar := perspectiveGeom(in.Layout, len(in.Shape))
	frames := 1
	if len(in.Shape) == 4 {
		frames = in.Shape[0]
	}
	h, w := in.Shape[hAxis], in.Shape[hAxis+1]
	dh, dw := out.Shape[hAxis], out.Shape[hAxis+1]
	c := 1
	if cAxis >= 0 {
		c = in.Shape[cAxis]
	}
	if len(p.Fill) > 1 && len(p.Fill) != c {
		return a.ArgDataErrorf(ws, "fill_value", "Number of values provided as a fill_value should match the number of channels. Number of channels: %d. Number of values provided: %d.", c, len(p.Fill))
	}
	if c == 0 {
		return nil
	}
	// A planar sample (CHW, FCHW) is warped one channel plane at a time, each plane an
	// image of one channel with that channel's fill value.
	planes, pc := 1, c
	fill := p.Fill
	if planar {
		planes, pc = c, 1
	}
	sz := in.DType.Size()
	fi, fo := h*w*pc*sz, dh*dw*pc*sz
	for f := 0; f < frames*planes; f++ {
		src, dst := in.Data[f*fi:(f+1)*fi], out.Data[f*fo:(f+1)*fo]
		if planar && len(fill) > 1 {
			p.Fill = fill[f%planes : f%planes+1]
		}
		c := pc
		switch in.DType {
		case engine.UInt8:
			err = imaging.PerspectiveImage(&p, dst, dw, dh, src, w, h, c)
		case engine.Int16:
			err = imaging.PerspectiveImage(&p, imaging.Elems[int16](dst), dw, dh, imaging.Elems[int16](src), w, h, c)
		case engine.UInt16:
			err = imaging.PerspectiveImage(&p, imaging.Elems[uint16](dst), dw, dh, imaging.Elems[uint16](src), w, h, c)
		case engine.Float32:
			err = imaging.PerspectiveImage(&p, imaging.Elems[float32](dst), dw, dh, imaging.Elems[float32](src), w, h, c)
		default:
			return a.DataErrorf(ws, "input must be UINT8, INT16, UINT16 or FLOAT, got %s", in.DType)
		}
		if err != nil {
			return a.DataErrorf(ws, "%v", err)
		}
	}
	return nil
}

// nnLinearCubic reads an interpolation argument that takes INTERP_NN, INTERP_LINEAR or
// INTERP_CUBIC (OpenCV's samplers: warp_perspective, remap).
func nnLinearCubic(a *engine.Args, arg, op string) (imaging.Interp, error) {
	switch a.String(arg) {
	case "NN":
		return imaging.InterpNN, nil
	case "LINEAR":
		return imaging.InterpLinear, nil
	case "CUBIC":
		return imaging.InterpCubic, nil
	}
	return 0, a.Errorf(arg, "%s supports INTERP_NN, INTERP_LINEAR and INTERP_CUBIC, got INTERP_%s", op, a.String(arg))
}
