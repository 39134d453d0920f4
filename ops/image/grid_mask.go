package image

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "grid_mask",
		Doc: "Zeroes HWC images in a grid of squares (GridMask, arXiv:2001.04086), as DALI's " +
			"grid_mask: pixel (x, y) is rotated by angle and shifted, (u, v) = (x cos a - y sin a " +
			"- shift_x, x sin a + y cos a - shift_y), and zeroed when the fractional parts of both " +
			"u / tile and v / tile are below ratio (DALI's float32 arithmetic). Any numeric type; " +
			"every argument may come per sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true,
		InputLayouts: []string{"HWC", "HW"}, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "tile", Type: engine.ArgInt, Default: 100, TensorInput: true, Doc: "length of a tile (black square plus spacing), in pixels (> 0)"},
			{Name: "ratio", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "width of a black square over tile, 0 to 1"},
			{Name: "angle", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "rotation of the grid, in radians"},
			{Name: "shift_x", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "x of the translation applied after rotation, in pixels"},
			{Name: "shift_y", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "y of the translation applied after rotation, in pixels"},
		},
	})
	engine.RegisterBackend("grid_mask", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if !a.AnyPerSample("tile") && a.Int("tile") <= 0 {
			return nil, a.Errorf("tile", "expected a positive number of pixels, got %d", a.Int("tile"))
		}
		if r := a.Float("ratio"); !a.AnyPerSample("ratio") && !(r >= 0 && r <= 1) {
			return nil, a.Errorf("ratio", "expected a value in [0, 1], got %g", r)
		}
		return &gridMaskOp{args: a}, nil
	})
}

type gridMaskOp struct{ args *engine.Args }

func (o *gridMaskOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in[0].DType.Size() == 0 {
		return nil, o.args.Invalidf("input must be a numeric HWC tensor, got %s", in[0].DType)
	}
	return []engine.TensorMeta{in[0]}, nil
}

func (o *gridMaskOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	ws.Out[0].Layout = ws.In[0].Layout
	return nil
}

func (o *gridMaskOp) Run(ws *engine.Workspace) error {
	a := o.args
	tile, err := a.IntAt(ws, "tile")
	if err != nil {
		return err
	}
	if tile <= 0 {
		return a.ArgDataErrorf(ws, "tile", "expected a positive number of pixels, got %d", tile)
	}
	var v [4]float64
	for i, n := range []string{"ratio", "angle", "shift_x", "shift_y"} {
		if v[i], err = a.FloatAt(ws, n); err != nil {
			return err
		}
		if math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
			return a.ArgDataErrorf(ws, n, "expected a finite number, got %g", v[i])
		}
	}
	ratio, angle, sx, sy := v[0], v[1], v[2], v[3]
	if ratio < 0 || ratio > 1 {
		return a.ArgDataErrorf(ws, "ratio", "expected a value in [0, 1], got %g", ratio)
	}
	in, out := ws.In[0], ws.Out[0]
	n := in.NumBytes()
	copy(out.Data, in.Data[:n])
	h, w := in.Shape[0], in.Shape[1]
	px := in.DType.Size() // bytes of one pixel
	if len(in.Shape) == 3 {
		px *= in.Shape[2]
	}
	// DALI's arithmetic, in float32 (measured with its CPU operator on coordinate grids:
	// the squares' edges fall on exactly the same pixels): (u, v) = (x cos a - y sin a -
	// shift_x, x sin a + y cos a - shift_y), a pixel is black when the fractional parts of
	// u / tile and v / tile (multiplied by the float32 reciprocal) are both below ratio.
	inv := float32(1) / float32(tile)
	r := float32(ratio)
	ca, sa := float32(math.Cos(angle)), float32(math.Sin(angle))
	fsx, fsy := float32(sx), float32(sy)
	for y := 0; y < h; y++ {
		row := out.Data[y*w*px : (y+1)*w*px]
		fy := float32(y)
		for x := 0; x < w; x++ {
			fx := float32(x)
			// (explicit conversions: each product rounded to float32, never fused)
			u := float32(float32(float32(fx*ca)-float32(fy*sa))-fsx) * inv
			v := float32(float32(float32(fx*sa)+float32(fy*ca))-fsy) * inv
			if u-float32(math.Floor(float64(u))) < r && v-float32(math.Floor(float64(v))) < r {
				clear(row[x*px : (x+1)*px])
			}
		}
	}
	return nil
}
