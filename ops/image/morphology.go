package image

import (
	"fmt"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// experimental.median_blur, experimental.dilate and experimental.erode: window filters
// over the two spatial axes of images (HW, HWC, CHW) and sequences of them (FHWC, FCHW),
// each channel and frame apart. DALI has them on the GPU only (CV-CUDA); godali runs them
// on the CPU with CV-CUDA's arguments, which follow OpenCV's conventions: sizes and
// anchors are (width, height), (x, y).

var windowLayouts = []string{"HW", "HWC", "FHWC", "CHW", "FCHW"}

var windowDtypes = []engine.DType{engine.UInt8, engine.Int8, engine.UInt16, engine.Int16, engine.UInt32, engine.Int32, engine.Float32}

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "experimental.median_blur",
		Doc: "Replaces each pixel with the median of the window_size window around it, each channel apart " +
			"(DALI's fn.experimental.median_blur, OpenCV's medianBlur): edge pixels repeat past the borders. " +
			"HW, HWC, CHW, FHWC, FCHW; integer or FLOAT input, output of its type.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		InputLayouts: windowLayouts, InputDtypes: windowDtypes,
		Args: []engine.ArgSpec{
			{Name: "window_size", Type: engine.ArgIntList, Default: []int64{3, 3}, TensorInput: true,
				Doc: fmt.Sprintf("(width, height) of the window, odd, at most %d, or one value for both; may come per sample", maxFilterWindow)},
		},
	})
	engine.RegisterBackend("experimental.median_blur", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if !a.AnyPerSample("window_size") {
			if _, msg := medianWindow(a.Ints("window_size")); msg != "" {
				return nil, a.Errorf("window_size", "%s", msg)
			}
		}
		return &windowOp{args: a, median: true}, nil
	})
	for _, name := range []string{"experimental.dilate", "experimental.erode"} {
		what, op := "maximum", "dilate"
		if name == "experimental.erode" {
			what, op = "minimum", "erode"
		}
		engine.RegisterSchema(&engine.Schema{
			Name: name,
			Doc: "Sets each pixel to the " + what + " over a mask_size rectangle placed with its anchor on the " +
				"pixel, each channel apart (DALI's fn." + name + ", OpenCV's " + op + " with a MORPH_RECT " +
				"element); iterations repeat it. HW, HWC, CHW, FHWC, FCHW; integer or FLOAT input, output of its type.",
			MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
			InputLayouts: windowLayouts, InputDtypes: windowDtypes,
			Args: []engine.ArgSpec{
				{Name: "mask_size", Type: engine.ArgIntList, Default: []int64{3, 3}, TensorInput: true,
					Doc: fmt.Sprintf("(width, height) of the structuring element, each 1 to %d (grown by iterations: at most %[1]d); may come per sample", maxFilterWindow)},
				{Name: "anchor", Type: engine.ArgIntList, Default: []int64{-1, -1}, TensorInput: true,
					Doc: "(x, y) of the element's point placed on the pixel; -1: the centre (size // 2); may come per sample"},
				{Name: "iterations", Type: engine.ArgInt, Default: 1,
					Doc: "times the operation is applied (a rectangle: as one pass with the mask grown by (size - 1) per extra iteration)"},
				{Name: "border_mode", Type: engine.ArgString, Default: "constant",
					Doc: "positions outside the image: constant (left out), replicate, reflect, reflect_101 or wrap"},
			},
		})
		dilate := op == "dilate"
		engine.RegisterBackend(name, "cpu", func(a *engine.Args) (engine.Operator, error) {
			o := &windowOp{args: a, dilate: dilate}
			var ok bool
			if o.border, ok = perspectiveBorders[a.String("border_mode")]; !ok {
				return nil, a.Errorf("border_mode", "Invalid border_mode argument: %q (expected constant, replicate, reflect, reflect_101 or wrap)", a.String("border_mode"))
			}
			if it := a.Int("iterations"); it < 1 {
				return nil, a.Errorf("iterations", "iterations must be >= 1, got %d", it)
			}
			if !a.AnyPerSample("mask_size") {
				if m, ok := engine.Pair(a.Ints("mask_size")); ok {
					if _, arg, msg := morphWindow(m, int64(a.Int("iterations"))); msg != "" {
						return nil, a.Errorf(arg, "%s", msg)
					}
				}
			}
			return o, nil
		})
	}
}

// maxFilterWindow bounds the windows of median_blur, dilate and erode (mask_size grown
// by iterations) along each axis, as gaussian_blur's window is bounded. Within it a
// window larger than the image costs no more than one the image's size (imaging's
// MorphRect and MedianRect); beyond it a size says nothing an image could show.
const maxFilterWindow = 2*maxBlurRadius + 1

// medianWindow reads (width, height) (one value: both); msg says what is wrong.
func medianWindow(v []int64) ([2]int, string) {
	p, ok := engine.Pair(v)
	if !ok {
		return [2]int{}, "expected one value or (width, height)"
	}
	for _, s := range p {
		if s < 1 || s%2 == 0 {
			return [2]int{}, fmt.Sprintf("The window size must be an odd integer, got %v", v)
		}
		if s > maxFilterWindow {
			return [2]int{}, fmt.Sprintf("window_size %v is larger than godali's limit (%d)", v, maxFilterWindow)
		}
	}
	return [2]int{int(p[0]), int(p[1])}, ""
}

// morphWindow is the (width, height) of the window mask m applied iterations times
// (as one pass, OpenCV's rule for a rectangle: each extra iteration adds size - 1);
// arg and msg say which argument is wrong and how.
func morphWindow(m [2]int64, iterations int64) (win [2]int, arg, msg string) {
	for i, s := range m {
		if s < 1 {
			return win, "mask_size", fmt.Sprintf("expected sizes of 1 or more, got %v", m)
		}
		if s > maxFilterWindow {
			return win, "mask_size", fmt.Sprintf("mask_size %v is larger than godali's limit (%d)", m, maxFilterWindow)
		}
		if iterations > 1 && s > 1 && iterations > (maxFilterWindow-1)/(s-1) {
			return win, "iterations", fmt.Sprintf("mask_size %v applied iterations=%d times makes a window larger than godali's limit (%d)", m, iterations, maxFilterWindow)
		}
		win[i] = int((s-1)*max(iterations, 1) + 1)
	}
	return win, "", ""
}

type windowOp struct {
	args           *engine.Args
	median, dilate bool
	border         imaging.Border
}

func (o *windowOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{in[0]}, nil
}

func (o *windowOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	ws.Out[0].Layout = ws.In[0].Layout
	return nil
}

type windowState struct {
	src, dst []float64
	scratch  imaging.WindowScratch
	ibuf     []int
}

func (o *windowOp) NewWorkerState() any { return &windowState{} }

// pairAt reads a (width, height) or (x, y) argument for this sample (one value: both).
func (o *windowOp) pairAt(ws *engine.Workspace, name string, st *windowState) ([2]int, error) {
	v, err := o.args.IntsAt(ws, name, st.ibuf)
	if err != nil {
		return [2]int{}, err
	}
	st.ibuf = v
	p, ok := engine.Pair(v)
	if !ok {
		return p, o.args.ArgDataErrorf(ws, name, "expected one value or two, (width, height) or (x, y), got %v", v)
	}
	return p, nil
}

func (o *windowOp) Run(ws *engine.Workspace) error {
	a := o.args
	st := ws.State.(*windowState)
	in, out := ws.In[0], ws.Out[0]
	outer, axes, inner, msg := layoutSplit(in.Layout, in.Shape)
	if msg != "" || len(axes) != 2 {
		return a.DataErrorf(ws, "input %s %v: expected two spatial axes (HW, HWC, CHW, FHWC, FCHW) %s", in.Layout, in.Shape, msg)
	}
	h, w := in.Shape[axes[0]], in.Shape[axes[1]]
	var kw, kh, ax, ay int
	if o.median {
		p, err := o.pairAt(ws, "window_size", st)
		if err != nil {
			return err
		}
		if _, msg := medianWindow([]int64{int64(p[0]), int64(p[1])}); msg != "" {
			return a.ArgDataErrorf(ws, "window_size", "%s", msg)
		}
		kw, kh = p[0], p[1]
	} else {
		m, err := o.pairAt(ws, "mask_size", st)
		if err != nil {
			return err
		}
		it := a.Int("iterations")
		win, arg, msg := morphWindow([2]int64{int64(m[0]), int64(m[1])}, int64(it))
		if msg != "" {
			return a.ArgDataErrorf(ws, arg, "%s", msg)
		}
		an, err := o.pairAt(ws, "anchor", st)
		if err != nil {
			return err
		}
		for i := range an {
			if an[i] == -1 {
				an[i] = m[i] / 2
			}
			if an[i] < 0 || an[i] >= m[i] {
				return a.ArgDataErrorf(ws, "anchor", "the anchor (x, y) %v must lie within the mask %v (or be -1)", an, m)
			}
		}
		kw, kh = win[0], win[1]
		ax, ay = an[0]*it, an[1]*it
	}
	n := h * w * inner
	if n == 0 || outer == 0 {
		return nil
	}
	st.src, st.dst = growF64(st.src, n), growF64(st.dst, n)
	sz := in.DType.Size()
	for p := 0; p < outer; p++ {
		base := p * n
		for i := range st.src {
			st.src[i] = engine.ReadScalar(in.Data[(base+i)*sz:], in.DType)
		}
		var err error
		if o.median {
			err = imaging.MedianRect(st.dst, st.src, h, w, inner, kh, kw, &st.scratch)
		} else {
			err = imaging.MorphRect(st.dst, st.src, h, w, inner, kh, kw, ay, ax, o.border, o.dilate, &st.scratch)
		}
		if err != nil {
			return a.DataErrorf(ws, "%v", err)
		}
		for i, v := range st.dst {
			engine.WriteScalar(out.Data[(base+i)*sz:], out.DType, v)
		}
	}
	return nil
}
