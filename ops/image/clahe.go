package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// claheMaxTiles bounds tiles_x and tiles_y: the tables take tiles_x * tiles_y * 256 bytes
// and each tile at least a pixel, so a larger grid only costs memory.
const claheMaxTiles = 1024

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "clahe",
		Doc: "Contrast limited adaptive histogram equalization of uint8 HWC images with 1 or 3 channels, as " +
			"DALI's CPU clahe (OpenCV's cv2.createCLAHE(clip_limit, (tiles_x, tiles_y)).apply): each tile's " +
			"256-bin histogram is clipped at clip_limit * tile area / 256 and equalized, and every pixel blends " +
			"the tables of the four nearest tiles bilinearly. A 3-channel image (RGB order) is equalized on the L " +
			"of its 8-bit CIE L*a*b* encoding with luma_only (the default), each channel apart otherwise.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "tiles_x", Type: engine.ArgInt, Required: true, Doc: "number of tiles along the width (1 to 1024)"},
			{Name: "tiles_y", Type: engine.ArgInt, Required: true, Doc: "number of tiles along the height (1 to 1024)"},
			{Name: "clip_limit", Type: engine.ArgFloat, Required: true, Doc: "relative clip limit: a bin holds at most clip_limit * tile area / 256 (at least 1); 0 or less: no clipping"},
			{Name: "bins", Type: engine.ArgInt, Default: 256, Doc: "number of histogram bins; DALI's GPU variant reads it, its CPU variant (and godali) always uses 256"},
			{Name: "luma_only", Type: engine.ArgBool, Default: true, Doc: "with 3 channels (RGB): equalize the luminance (L*) only; false: each channel"},
		},
	})
	engine.RegisterBackend("clahe", "cpu", newClahe)
}

type claheOp struct {
	args   *engine.Args
	tx, ty int
	clip   float64
	luma   bool
}

func newClahe(a *engine.Args) (engine.Operator, error) {
	o := &claheOp{args: a, tx: a.Int("tiles_x"), ty: a.Int("tiles_y"), luma: a.Bool("luma_only")}
	for _, n := range []string{"tiles_x", "tiles_y"} {
		if v := a.Int(n); v < 1 || v > claheMaxTiles {
			return nil, a.Errorf(n, "expected a number of tiles from 1 to %d, got %d", claheMaxTiles, v)
		}
	}
	// DALI reads clip_limit as a float (32 bits) and hands it to OpenCV as a double.
	o.clip = float64(float32(a.Float("clip_limit")))
	return o, nil
}

func (o *claheOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if c := in[0].Shape[2]; c >= 0 && c != 1 && c != 3 {
		return nil, o.args.Invalidf("input must have 1 or 3 channels, got %v", in[0].Shape)
	}
	return []engine.TensorMeta{in[0]}, nil
}

func (o *claheOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	if c := in.Shape[2]; c != 1 && c != 3 {
		return o.args.DataErrorf(ws, "input must have 1 or 3 channels, got shape %v", in.Shape)
	}
	ws.Out[0].SetShape(in.Shape...)
	ws.Out[0].Layout = in.Layout
	return nil
}

type claheState struct {
	eq  imaging.CLAHE
	lab []uint8
}

func (o *claheOp) NewWorkerState() any { return &claheState{} }

func (o *claheOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*claheState)
	in, out := ws.In[0], ws.Out[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	st.eq.TilesX, st.eq.TilesY, st.eq.ClipLimit = o.tx, o.ty, o.clip
	src, dst := in.Data[:h*w*c], out.Data[:h*w*c]
	if c == 1 || !o.luma {
		for ch := 0; ch < c; ch++ {
			st.eq.Apply(dst[ch:], src[ch:], h, w, w*c, c)
		}
		return nil
	}
	if cap(st.lab) < h*w*3 {
		st.lab = make([]uint8, h*w*3)
	}
	lab := st.lab[:h*w*3]
	for i := 0; i < h*w; i++ {
		lab[3*i], lab[3*i+1], lab[3*i+2] = imaging.RGBToLab8(src[3*i], src[3*i+1], src[3*i+2])
	}
	st.eq.Apply(lab, lab, h, w, w*3, 3) // in place: the tables are built before any pixel is written
	for i := 0; i < h*w; i++ {
		dst[3*i], dst[3*i+1], dst[3*i+2] = imaging.Lab8ToRGB(lab[3*i], lab[3*i+1], lab[3*i+2])
	}
	return nil
}
