package image

import (
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "warp_affine",
		Doc: "Applies an affine transform to HWC uint8 images, as DALI's warp_affine: matrix is " +
			"the 2x3 matrix (row-major, 6 numbers) in pixel-edge coordinates (pixel (x, y) centred " +
			"at (x+0.5, y+0.5)); with inverse_map (the default) it maps output points to the input " +
			"points they show, with inverse_map=False input points to output points. Pixels from " +
			"outside the input are fill_value, or the nearest edge pixel when it is not given.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "matrix", Type: engine.ArgFloatList, Required: true, Doc: "the 2x3 transform, row-major"},
			{Name: "size", Type: engine.ArgFloatList, Doc: "output size (height, width); default the input's"},
			{Name: "inverse_map", Type: engine.ArgBool, Default: true, Doc: "matrix maps output to input (true) or input to output (false)"},
			{Name: "fill_value", Type: engine.ArgFloat, Doc: "value of pixels from outside the input (0..255); default: repeat the edge"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: "INTERP_LINEAR or INTERP_NN"},
		},
	})
	engine.RegisterBackend("warp_affine", "cpu", func(a *engine.Args) (engine.Operator, error) { return newWarpAffine(a) })
}

type warpAffineOp struct {
	args *engine.Args
	warp imaging.Warp
	w, h int // 0: the input's
}

func newWarpAffine(a *engine.Args) (*warpAffineOp, error) {
	o := &warpAffineOp{args: a}
	m := a.Floats("matrix")
	if len(m) != 6 {
		return nil, a.Errorf("matrix", "expected 6 numbers (a 2x3 matrix, row-major), got %d", len(m))
	}
	for _, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, a.Errorf("matrix", "expected finite numbers, got %v", m)
		}
	}
	M := [2][3]float64{{m[0], m[1], m[2]}, {m[3], m[4], m[5]}}
	if !a.Bool("inverse_map") {
		det := M[0][0]*M[1][1] - M[0][1]*M[1][0]
		if det == 0 || math.IsInf(1/det, 0) {
			return nil, a.Errorf("matrix", "with inverse_map=False the matrix must be invertible, got %v", m)
		}
		p, q, r, s := M[1][1]/det, -M[0][1]/det, -M[1][0]/det, M[0][0]/det
		tx, ty := M[0][2], M[1][2]
		M = [2][3]float64{{p, q, -(p*tx + q*ty)}, {r, s, -(r*tx + s*ty)}}
	}
	o.warp.M = M
	var err error
	o.warp.Interp, o.warp.UseFill, o.warp.Fill, err = warpSampling(a, "warp_affine")
	if err != nil {
		return nil, err
	}
	if s := a.Floats("size"); s != nil {
		if len(s) != 2 || !(s[0] >= 0.5 && s[1] >= 0.5) || s[0] > 1<<20 || s[1] > 1<<20 {
			return nil, a.Errorf("size", "expected (height, width) of at least 1 pixel, got %v", s)
		}
		o.h, o.w = int(math.Round(s[0])), int(math.Round(s[1]))
	}
	return o, nil
}

func (o *warpAffineOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	c := in[0].Shape[2]
	shape := []int{in[0].Shape[0], in[0].Shape[1], c}
	if o.w > 0 {
		shape = []int{o.h, o.w, c}
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "HWC", Shape: shape}}, nil
}

func (o *warpAffineOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	h, w := in.Shape[0], in.Shape[1]
	if o.w > 0 {
		h, w = o.h, o.w
	}
	if lim := ws.Limits; lim != nil && lim.MaxImagePixels > 0 && int64(w)*int64(h) > lim.MaxImagePixels {
		return o.args.DataErrorf(ws, "output of %dx%d pixels exceeds max_image_pixels (%d)", w, h, lim.MaxImagePixels)
	}
	ws.Out[0].SetShape(h, w, in.Shape[2])
	return nil
}

func (o *warpAffineOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	wp := o.warp
	return wp.Apply(out.Data, out.Shape[1], out.Shape[0], in.Data, in.Shape[1], in.Shape[0], in.Shape[2])
}
