package image

import (
	"fmt"
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

var warpTypes = []engine.DType{engine.UInt8, engine.Int16, engine.UInt16, engine.Float32}

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "warp_affine",
		Doc: "Applies an affine transform to HWC images (FHWC sequences frame by frame), as DALI's " +
			"warp_affine: the 2x3 matrix (row-major, 6 numbers) works in pixel-edge coordinates (pixel " +
			"(x, y) centred at (x+0.5, y+0.5)); with inverse_map (the default) it maps output points to " +
			"the input points they show, with inverse_map=False input points to output points. The " +
			"matrix is the matrix argument (may come per sample, or per frame with fn.per_frame) or " +
			"input 1 (a 2x3 FLOAT tensor per sample). Points are sampled exactly (no sub-pixel grid). " +
			"Pixels from outside the input are fill_value, or the nearest edge pixel when it is not " +
			"given. UINT8, INT16, UINT16 or FLOAT input; dtype picks the output type (default the input's).",
		Sequences: engine.PerFrame,
		MinInputs: 1, MaxInputs: 2, Outputs: []string{"images"}, HostOnly: true, InputLayouts: hwc, InputDtypes: warpTypes, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "matrix", Type: engine.ArgFloatList, TensorInput: true, Doc: "the 2x3 transform, row-major (6 numbers); may come per sample; or give input 1"},
			{Name: "size", Type: engine.ArgFloatList, TensorInput: true, Doc: "output size (height, width), rounded; default the input's; may come per sample"},
			{Name: "inverse_map", Type: engine.ArgBool, Default: true, Doc: "matrix maps output to input (true) or input to output (false)"},
			{Name: "fill_value", Type: engine.ArgFloat, Doc: "value of pixels from outside the input (saturated to the output type); default: repeat the edge"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: "INTERP_LINEAR or INTERP_NN"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: UINT8, INT16, UINT16 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("warp_affine", "cpu", func(a *engine.Args) (engine.Operator, error) { return newWarpAffine(a) })
}

type warpAffineOp struct {
	args *engine.Args
	p    imaging.Perspective // Interp, Border, Fill, Corner
	out  engine.DType        // DTypeInvalid: the input's
}

func newWarpAffine(a *engine.Args) (*warpAffineOp, error) {
	o := &warpAffineOp{args: a, p: imaging.Perspective{Corner: true, Border: imaging.BorderClamp}}
	switch a.String("interp_type") {
	case "NN":
		o.p.Interp = imaging.InterpNN
	case "LINEAR":
		o.p.Interp = imaging.InterpLinear
	default:
		return nil, a.Errorf("interp_type", "warp_affine supports INTERP_LINEAR and INTERP_NN, got INTERP_%s", a.String("interp_type"))
	}
	if a.GivenConstant("fill_value") {
		f := a.Float("fill_value")
		if math.IsNaN(f) {
			return nil, a.Errorf("fill_value", "expected a number, got NaN")
		}
		o.p.Border, o.p.Fill = imaging.BorderConstant, []float64{f}
	}
	if a.Given("dtype") {
		o.out = a.DType("dtype")
		if !warpType(o.out) {
			return nil, a.Errorf("dtype", "expected UINT8, INT16, UINT16 or FLOAT, got %s", o.out)
		}
	}
	if a.GivenConstant("matrix") && !a.AnyPerSample("matrix") {
		if _, msg := affineMatrix(a.Floats("matrix"), a.Bool("inverse_map")); msg != "" {
			return nil, a.Errorf("matrix", "%s", msg)
		}
	}
	if s := a.Floats("size"); a.GivenConstant("size") && !a.AnyPerSample("size") {
		if msg := checkWarpSize(s); msg != "" {
			return nil, a.Errorf("size", "%s", msg)
		}
	}
	return o, nil
}

func warpType(t engine.DType) bool {
	for _, d := range warpTypes {
		if d == t {
			return true
		}
	}
	return false
}

func checkWarpSize(s []float64) string {
	if len(s) != 2 || !(s[0] >= 0.5 && s[1] >= 0.5) || s[0] > 1<<20 || s[1] > 1<<20 {
		return fmt.Sprintf("expected (height, width) of at least 1 pixel and at most 2^20, got %v", s)
	}
	return ""
}

// affineMatrix checks a 2x3 matrix (6 numbers, row-major) and returns it as the output ->
// input homography (inverting it for inverse_map=false); msg says what is wrong.
func affineMatrix(m []float64, inverse bool) (M [3][3]float64, msg string) {
	if len(m) != 6 {
		return M, fmt.Sprintf("expected 6 numbers (a 2x3 matrix, row-major), got %d", len(m))
	}
	for _, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return M, fmt.Sprintf("expected finite numbers, got %v", m)
		}
	}
	M = [3][3]float64{{m[0], m[1], m[2]}, {m[3], m[4], m[5]}, {0, 0, 1}}
	if inverse {
		return M, ""
	}
	det := m[0]*m[4] - m[1]*m[3]
	if det == 0 || math.IsInf(1/det, 0) {
		return M, fmt.Sprintf("with inverse_map=False the matrix must be invertible, got %v", m)
	}
	p, q, r, s := m[4]/det, -m[1]/det, -m[3]/det, m[0]/det
	tx, ty := m[2], m[5]
	return [3][3]float64{{p, q, -(p*tx + q*ty)}, {r, s, -(r*tx + s*ty)}, {0, 0, 1}}, ""
}

func (o *warpAffineOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	a := o.args
	if len(in) > 1 {
		if a.Given("matrix") {
			return nil, a.Errorf("matrix", "give the matrix either as the matrix argument or as input 1, not both")
		}
		if m := in[1]; m.DType != engine.Float32 || (m.Shape != nil && (len(m.Shape) != 2 || (m.Shape[0] >= 0 && m.Shape[0] != 2) || (m.Shape[1] >= 0 && m.Shape[1] != 3))) {
			return nil, a.Invalidf("input 1 (the matrix) must be a 2x3 FLOAT tensor per sample, got %s %v", m.DType, m.Shape)
		}
	} else if !a.Given("matrix") {
		return nil, a.Errorf("matrix", "give the 2x3 matrix: the matrix argument or input 1")
	}
	out := in[0]
	out.Shape = append([]int(nil), in[0].Shape...)
	if o.out != engine.DTypeInvalid {
		out.DType = o.out
	}
	if len(out.Shape) == 3 {
		switch {
		case a.GivenConstant("size") && !a.AnyPerSample("size"):
			s := a.Floats("size")
			out.Shape[0], out.Shape[1] = int(math.Round(s[0])), int(math.Round(s[1]))
		case a.Given("size"):
			out.Shape[0], out.Shape[1] = -1, -1
		}
	}
	return []engine.TensorMeta{out}, nil
}

type warpAffineState struct{ buf []float64 }

func (o *warpAffineOp) NewWorkerState() any { return &warpAffineState{} }

func (o *warpAffineOp) Setup(ws *engine.Workspace) error {
	a := o.args
	in, out := ws.In[0], ws.Out[0]
	h, w := in.Shape[0], in.Shape[1]
	if a.Given("size") {
		st := ws.State.(*warpAffineState)
		s, err := a.FloatsAt(ws, "size", st.buf)
		if err != nil {
			return err
		}
		st.buf = s
		if msg := checkWarpSize(s); msg != "" {
			return a.ArgDataErrorf(ws, "size", "%s", msg)
		}
		h, w = int(math.Round(s[0])), int(math.Round(s[1]))
	}
	if lim := ws.Limits; lim != nil && lim.MaxImagePixels > 0 && int64(w)*int64(h) > lim.MaxImagePixels {
		return a.DataErrorf(ws, "output of %dx%d pixels exceeds max_image_pixels (%d)", w, h, lim.MaxImagePixels)
	}
	ws.Out[0].SetShape(h, w, in.Shape[2])
	out.Layout = in.Layout
	return nil
}

// matrix is this sample's output -> input homography in pixel-edge coordinates.
func (o *warpAffineOp) matrix(ws *engine.Workspace, st *warpAffineState) ([3][3]float64, error) {
	a := o.args
	inverse := a.Bool("inverse_map")
	if len(ws.In) > 1 {
		t := ws.In[1]
		if t.DType != engine.Float32 || len(t.Shape) != 2 || t.Shape[0] != 2 || t.Shape[1] != 3 {
			return [3][3]float64{}, a.DataErrorf(ws, "input 1 (the matrix) must be a 2x3 FLOAT tensor, got %s data with shape %v", t.DType, t.Shape)
		}
		v := st.buf[:0]
		for i := 0; i < 6; i++ {
			v = append(v, engine.ReadScalar(t.Data[4*i:], engine.Float32))
		}
		st.buf = v
		M, msg := affineMatrix(v, inverse)
		if msg != "" {
			return M, a.DataErrorf(ws, "input 1 (the matrix): %s", msg)
		}
		return M, nil
	}
	v, err := a.FloatsAt(ws, "matrix", st.buf)
	if err != nil {
		return [3][3]float64{}, err
	}
	st.buf = v
	M, msg := affineMatrix(v, inverse)
	if msg != "" {
		return M, a.ArgDataErrorf(ws, "matrix", "%s", msg)
	}
	return M, nil
}

func (o *warpAffineOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	M, err := o.matrix(ws, ws.State.(*warpAffineState))
	if err != nil {
		return err
	}
	if in.Shape[2] == 0 {
		return nil
	}
	p := o.p
	p.M = M
	g := warpGeom{dw: out.Shape[1], dh: out.Shape[0], w: in.Shape[1], h: in.Shape[0], c: in.Shape[2]}
	switch in.DType {
	case engine.UInt8:
		err = warpTo(&p, out, in.Data, g)
	case engine.Int16:
		err = warpTo(&p, out, imaging.Elems[int16](in.Data), g)
	case engine.UInt16:
		err = warpTo(&p, out, imaging.Elems[uint16](in.Data), g)
	case engine.Float32:
		err = warpTo(&p, out, imaging.Elems[float32](in.Data), g)
	default:
		return o.args.DataErrorf(ws, "input must be UINT8, INT16, UINT16 or FLOAT, got %s", in.DType)
	}
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	return nil
}

type warpGeom struct{ dw, dh, w, h, c int }

// warpTo runs the warp into out's element type.
func warpTo[In imaging.PerspectivePixel](p *imaging.Perspective, out *engine.Tensor, src []In, g warpGeom) error {
	switch out.DType {
	case engine.UInt8:
		return imaging.WarpImage(p, out.Data, g.dw, g.dh, src, g.w, g.h, g.c)
	case engine.Int16:
		return imaging.WarpImage(p, imaging.Elems[int16](out.Data), g.dw, g.dh, src, g.w, g.h, g.c)
	case engine.UInt16:
		return imaging.WarpImage(p, imaging.Elems[uint16](out.Data), g.dw, g.dh, src, g.w, g.h, g.c)
	case engine.Float32:
		return imaging.WarpImage(p, imaging.Elems[float32](out.Data), g.dw, g.dh, src, g.w, g.h, g.c)
	}
	return fmt.Errorf("output type %s: expected UINT8, INT16, UINT16 or FLOAT", out.DType)
}
