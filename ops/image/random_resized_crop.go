package image

import (
	"fmt"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
	"github.com/godali/godali/ops/internal/window"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "random_resized_crop",
		Doc: "Crops a random region (area and aspect ratio as torchvision's RandomResizedCrop) and resizes it to " +
			"size, along the H and W axes of any layout (HWC, CHW, FHWC, FCHW, CFHW, ...; no layout: HWC) and " +
			"type; HWC uint8 images take the fixed-point resize.",
		Sequences: engine.PerFrame,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: append([]engine.ArgSpec{
			{Name: "size", Type: engine.ArgFloatList, Required: true, Doc: "output size (height, width); a scalar applies to both"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: interpDoc},
			{Name: "antialias", Type: engine.ArgBool, Default: true, Doc: "widen the filter when downscaling"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type (default: the input's); integers round and saturate"},
		}, window.RandomCropArgs...),
	})
	engine.RegisterBackend("random_resized_crop", "cpu", func(a *engine.Args) (engine.Operator, error) { return newRandomResizedCrop(a) })
}

type randomResizedCropOp struct {
	args   *engine.Args
	crop   *window.RandomCrop
	w, h   int
	interp imaging.Interp
	aa     bool
	out    engine.DType                    // output type (the generic path)
	read   func(src []byte, k int) float32 // the input's elements (the generic path)
}

func newRandomResizedCrop(a *engine.Args) (*randomResizedCropOp, error) {
	rc, err := window.ParseRandomCrop(a)
	if err != nil {
		return nil, err
	}
	s, err := a.FloatPair("size")
	if err == nil {
		err = a.CheckExtentArgs("size")
	}
	if err != nil {
		return nil, err
	}
	if s[0] < 1 || s[1] < 1 {
		return nil, a.Errorf("size", "expected (height, width) >= 1, got %v", a.Floats("size"))
	}
	if a.Has("dtype") && (a.DType("dtype").Size() == 0 || a.DType("dtype") == engine.Bool) {
		return nil, a.Errorf("dtype", "must be a numeric type")
	}
	interp, _ := imaging.ParseInterp(a.String("interp_type"))
	return &randomResizedCropOp{args: a, crop: rc, h: int(s[0]), w: int(s[1]), interp: interp, aa: a.Bool("antialias")}, nil
}

// rrcLayout is the layout a sample is processed as, and its H and W axes.
func rrcLayout(layout string, ndim int) (string, int, int, error) {
	if layout == "" && ndim == 3 {
		layout = "HWC"
	}
	h, w := strings.IndexByte(layout, 'H'), strings.IndexByte(layout, 'W')
	if h < 0 || w < 0 || len(layout) != ndim {
		return "", 0, 0, fmt.Errorf("input layout %q (%d dimensions) has no H and W axes to crop", layout, ndim)
	}
	return layout, h, w, nil
}

// fast reports whether samples take the fixed-point HWC uint8 resize.
func (o *randomResizedCropOp) fast(layout string, in engine.DType) bool {
	return layout == "HWC" && in == engine.UInt8 && o.out == engine.UInt8
}

func (o *randomResizedCropOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 || m.DType == engine.Bool {
		return nil, o.args.Invalidf("input 0 must be images of known rank and a numeric type, got %s %v", m.DType, m.Shape)
	}
	o.out = m.DType
	if o.args.Has("dtype") {
		o.out = o.args.DType("dtype")
	}
	sz := m.DType.Size()
	dt := m.DType
	o.read = func(src []byte, k int) float32 { return float32(engine.ReadScalar(src[k*sz:], dt)) }
	shape := make([]int, len(m.Shape))
	for i := range shape {
		shape[i] = -1
	}
	if m.Layout == "" && len(m.Shape) != 3 {
		return []engine.TensorMeta{{DType: o.out, Shape: shape}}, nil // the layout comes with the data
	}
	lay, h, w, err := rrcLayout(m.Layout, len(m.Shape))
	if err != nil {
		return nil, o.args.Invalidf("%v", err)
	}
	copy(shape, m.Shape)
	shape[h], shape[w] = o.h, o.w
	return []engine.TensorMeta{{DType: o.out, Layout: lay, Shape: shape}}, nil
}

type rrcState struct {
	resizeState
	generic bool
	h, w    int // the sample's H and W axes
	th, tw  imaging.FloatTaps
	tmp     []float32
	res     []float32
	mid     []int
}

func (o *randomResizedCropOp) NewWorkerState() any { return &rrcState{} }

func (o *randomResizedCropOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*rrcState)
	in := ws.In[0]
	lay, h, w, err := rrcLayout(in.Layout, len(in.Shape))
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if in.Shape[h] < 1 || in.Shape[w] < 1 {
		return o.args.DataErrorf(ws, "cannot crop an empty image %v", in.Shape)
	}
	r := o.crop.Window(in.Shape[w], in.Shape[h], ws.RNG)
	st.roi = [4]float64{float64(r.X), float64(r.Y), float64(r.X + r.W), float64(r.Y + r.H)}
	st.generic = !o.fast(lay, in.DType)
	out := ws.Out[0]
	out.DType, out.Layout = o.out, lay
	if !st.generic {
		out.SetShape(o.h, o.w, in.Shape[2])
		return nil
	}
	st.h, st.w = h, w
	// The window is resampled as an image of its own (torchvision crops, then resizes):
	// taps over the window, moved to its place in the input.
	if err := st.th.Init(r.H, 0, float64(r.H), o.h, o.interp, o.aa); err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if err := st.tw.Init(r.W, 0, float64(r.W), o.w, o.interp, o.aa); err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	st.th.Shift(r.Y)
	st.tw.Shift(r.X)
	out.SetShape(in.Shape...)
	out.Shape[h], out.Shape[w] = o.h, o.w
	return nil
}

func (o *randomResizedCropOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*rrcState)
	in := ws.In[0]
	if !st.generic {
		// The window alone, as torchvision crops before it resizes: the filters read no
		// pixel outside it.
		x, y := int(st.roi[0]), int(st.roi[1])
		ww, wh := int(st.roi[2])-x, int(st.roi[3])-y
		c, stride := in.Shape[2], in.Shape[1]*in.Shape[2]
		if err := st.plan.Init(ww, wh, imaging.FullROI(ww, wh), o.w, o.h, o.interp, o.aa); err != nil {
			return err
		}
		return st.plan.ResizeStrided(ws.Out[0].Data, in.Data[y*stride+x*c:], c, stride, &st.scratch)
	}
	// Along H (reading the input), then along W.
	s := in.Shape
	d0, d2 := numElements(s[:st.h]), numElements(s[st.h+1:])
	st.tmp = growFloats(st.tmp, d0*o.h*d2)
	if err := imaging.ResampleAxis(st.tmp, in.Data, o.read, d0, s[st.h], d2, &st.th); err != nil {
		return err
	}
	st.mid = append(st.mid[:0], s...) // the shape between the passes
	st.mid[st.h] = o.h
	d0, d2 = numElements(st.mid[:st.w]), numElements(st.mid[st.w+1:])
	st.res = growFloats(st.res, d0*o.w*d2)
	if err := imaging.ResampleAxis(st.res, st.tmp, atFloat, d0, s[st.w], d2, &st.tw); err != nil {
		return err
	}
	sz, dst := o.out.Size(), ws.Out[0].Data
	for k, v := range st.res {
		engine.WriteScalarSat(dst[k*sz:], o.out, float64(v))
	}
	return nil
}

func atFloat(s []float32, k int) float32 { return s[k] }
