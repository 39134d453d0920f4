package image

import (
	"slices"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "experimental.remap",
		Doc: "Moves pixels by per-pixel maps, as DALI's experimental.remap: output(x, y) = input(mapx(x, y), " +
			"mapy(x, y)). Input 0 is an HWC image (1 or more channels) or an FHWC sequence, UINT8, INT16, UINT16 " +
			"or FLOAT; inputs 1 and 2 (mapx, mapy) are FLOAT, HW or HW1 with the image's height and width (for a " +
			"sequence, also FHW/FHW1: one map per frame). Points outside the image read 0 (DALI's only border). " +
			"DALI has this operator on the GPU only; godali's CPU variant samples as OpenCV's cv2.remap with " +
			"BORDER_CONSTANT (linear and cubic at 1/32 of a pixel), on maps shifted by -0.5 for " +
			"pixel_origin=\"corner\". The output has the input's shape and type.",
		MinInputs: 3, MaxInputs: 3, Outputs: []string{"output"}, HostOnly: true,
		InputLayouts: []string{"HWC", "FHWC"},
		InputDtypes:  []engine.DType{engine.UInt8, engine.Int16, engine.UInt16, engine.Float32},
		Args: []engine.ArgSpec{
			{Name: "interp", Type: engine.ArgInterpType, Default: "LINEAR", Doc: "INTERP_NN, INTERP_LINEAR or INTERP_CUBIC"},
			{Name: "pixel_origin", Type: engine.ArgString, Default: "corner",
				Doc: "\"corner\": map value (0, 0) is the top-left corner of the first pixel; \"center\": its centre (OpenCV's convention)"},
		},
	})
	engine.RegisterBackend("experimental.remap", "cpu", newRemap)
}

type remapOp struct {
	args *engine.Args
	p    imaging.Remap // Interp, Shift; border constant 0
}

func newRemap(a *engine.Args) (engine.Operator, error) {
	o := &remapOp{args: a}
	var err error
	if o.p.Interp, err = nnLinearCubic(a, "interp", "remap"); err != nil {
		return nil, err
	}
	switch a.String("pixel_origin") {
	case "corner":
		o.p.Shift = -0.5
	case "center":
	default:
		return nil, a.Errorf("pixel_origin", "Undefined pixel_origin parameter %q. Please choose one of: \"center\", \"corner\"", a.String("pixel_origin"))
	}
	o.p.Border = imaging.BorderConstant
	return o, nil
}

func (o *remapOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	for i, name := range []string{"mapx", "mapy"} {
		if m := in[i+1]; m.DType != engine.Float32 {
			return nil, o.args.Invalidf("input %d (%s) must be FLOAT, got %s", i+1, name, m.DType)
		}
	}
	return []engine.TensorMeta{in[0]}, nil
}

func (o *remapOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	ws.Out[0].Layout = ws.In[0].Layout
	return nil
}

// mapFrames checks a map's shape against the image's (frames, h, w): HW, HW1, or with a
// sequence FHW / FHW1; it returns how many frames the map has (1: shared by all).
func mapFrames(sh []int, frames, h, w int) (int, bool) {
	eq := func(a []int, b ...int) bool { return slices.Equal(a, b) }
	switch {
	case eq(sh, h, w), eq(sh, h, w, 1):
		return 1, true
	case eq(sh, frames, h, w), eq(sh, frames, h, w, 1):
		return frames, true
	}
	return 0, false
}

func (o *remapOp) Run(ws *engine.Workspace) error {
	a := o.args
	in, out := ws.In[0], ws.Out[0]
	frames, hAxis := 1, 0
	if len(in.Shape) == 4 {
		frames, hAxis = in.Shape[0], 1
	}
	h, w, c := in.Shape[hAxis], in.Shape[hAxis+1], in.Shape[hAxis+2]
	var mf [2]int
	for i, name := range []string{"mapx", "mapy"} {
		n, ok := mapFrames(ws.In[i+1].Shape, frames, h, w)
		if !ok {
			return a.DataErrorf(ws, "input %d (%s) of shape %v must be HW or HW1 with the image's height and width (%d x %d), or FHW per frame of the %d-frame sequence", i+1, name, ws.In[i+1].Shape, h, w, frames)
		}
		mf[i] = n
	}
	if c == 0 || h == 0 || w == 0 {
		return nil
	}
	mx, my := imaging.Elems[float32](ws.In[1].Data), imaging.Elems[float32](ws.In[2].Data)
	p := o.p
	sz := in.DType.Size()
	fb, n := h*w*c*sz, h*w
	var err error
	for f := 0; f < frames; f++ {
		p.MapX = mx[min(f, mf[0]-1)*n:]
		p.MapY = my[min(f, mf[1]-1)*n:]
		src, dst := in.Data[f*fb:(f+1)*fb], out.Data[f*fb:(f+1)*fb]
		switch in.DType {
		case engine.UInt8:
			err = imaging.RemapImage(&p, dst, w, h, src, w, h, c)
		case engine.Int16:
			err = imaging.RemapImage(&p, imaging.Elems[int16](dst), w, h, imaging.Elems[int16](src), w, h, c)
		case engine.UInt16:
			err = imaging.RemapImage(&p, imaging.Elems[uint16](dst), w, h, imaging.Elems[uint16](src), w, h, c)
		case engine.Float32:
			err = imaging.RemapImage(&p, imaging.Elems[float32](dst), w, h, imaging.Elems[float32](src), w, h, c)
		}
		if err != nil {
			return a.DataErrorf(ws, "%v", err)
		}
	}
	return nil
}
