package image

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// maxBlurRadius bounds the window (a sigma of 1000 pixels is already a flat image).
const maxBlurRadius = 3000

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "gaussian_blur",
		Doc: "Blurs with a separable Gaussian along every spatial axis, borders reflected (101), as " +
			"DALI: images (HWC, HW, CHW, ...), volumes (DHWC, DHW, ...) and sequences (leading F, " +
			"blurred frame by frame); a leading F and/or C and a trailing C are not blurred, a " +
			"tensor without layout is all spatial (1 to 3 axes). With only sigma an axis's window " +
			"is 2 * ceil(3 * sigma) + 1 taps; with only window_size, sigma = ((window_size - 1) / 2 " +
			"- 1) * 0.3 + 0.8. Each takes one value or one per spatial axis (outer first), and may " +
			"come per sample. Any numeric input; the output has its type or FLOAT (dtype).",
		Sequences: engine.Sequences{PerFrame: true, ChannelFrames: true}, Volumetric: true,
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "sigma", Type: engine.ArgFloatList, Default: []float64{0}, TensorInput: true, Doc: "standard deviation of the Gaussian, in pixels: one value or one per spatial axis; 0 = from window_size"},
			{Name: "window_size", Type: engine.ArgIntList, Default: []int64{0}, TensorInput: true, Doc: "taps of the window (odd): one value or one per spatial axis; 0 = from sigma"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: the input's (default) or FLOAT"},
		},
	})
	engine.RegisterBackend("gaussian_blur", "cpu", func(a *engine.Args) (engine.Operator, error) { return newGaussianBlur(a) })
}

type gaussianBlurOp struct {
	args    *engine.Args
	out     engine.DType
	perArg  bool // sigma or window_size comes per sample
	fast    bool // HWC uint8 -> uint8/float: imaging.GaussianBlur
	imOut   imaging.DType
	skip    int         // leading F/C axes that are not blurred
	spatial int         // blurred axes after them
	windows [][]float32 // the constant windows, one per spatial axis
}

type gaussianBlurState struct {
	scratch  imaging.Scratch
	windows  [][]float32
	sig, win []float64
	a, b     []float32
}

func newGaussianBlur(a *engine.Args) (*gaussianBlurOp, error) {
	o := &gaussianBlurOp{args: a, perArg: a.AnyPerSample("sigma", "window_size")}
	if !o.perArg {
		// DALI's checks of the constants that need no input (the rest in Infer).
		for _, w := range a.Ints("window_size") {
			if w > 0 && w%2 == 0 {
				return nil, a.Errorf("window_size", "Kernel window should have odd length, got: %d.", w)
			}
		}
	}
	return o, nil
}

// blurLayout splits a layout into the leading axes that are not blurred (F and/or C),
// the spatial axes and a trailing C, with DALI's messages for the layouts it refuses.
func blurLayout(layout string, ndim int) (skip, spatial int, msg string) {
	if layout == "" {
		skip, spatial = 0, ndim
	} else {
		for skip < len(layout) && skip < 2 && (layout[skip] == 'F' || layout[skip] == 'C') {
			skip++
		}
		if skip == 2 && layout[0] == layout[1] {
			return 0, 0, fmt.Sprintf("Found more the one occurrence of 'F' or 'C' axes in layout: %s.", layout)
		}
		end := len(layout)
		if end > skip && layout[end-1] == 'C' {
			end--
		}
		rest := layout[skip:end]
		if strings.ContainsRune(rest, 'C') {
			return 0, 0, fmt.Sprintf("Only channel-first or channel-last layouts are supported, got: %s.", layout)
		}
		if strings.ContainsRune(rest, 'F') || (end < len(layout) && strings.ContainsRune(layout[:skip], 'C')) {
			if strings.ContainsRune(rest, 'F') {
				return 0, 0, fmt.Sprintf("For sequences, layout should begin with 'F' or 'C', got: %s.", layout)
			}
			return 0, 0, fmt.Sprintf("Found more the one occurrence of 'F' or 'C' axes in layout: %s.", layout)
		}
		spatial = len(rest)
	}
	if spatial > 3 {
		return 0, 0, fmt.Sprintf("Too many dimensions, found: %d data axes, maximum supported is: 3.", spatial)
	}
	if spatial < 1 {
		return 0, 0, fmt.Sprintf("no spatial axis to blur in layout %q", layout)
	}
	return skip, spatial, ""
}

// blurWindows fills windows (one per spatial axis) from sigma and window_size (one
// value or one per axis), with DALI's checks; msg says what is wrong.
func blurWindows(windows [][]float32, sig, win []float64, n, sample int) ([][]float32, string) {
	if len(sig) != 1 && len(sig) != n {
		return windows, fmt.Sprintf("argument \"sigma\": expected one value or %d (one per spatial axis), got %v", n, sig)
	}
	if len(win) != 1 && len(win) != n {
		return windows, fmt.Sprintf("argument \"window_size\": expected one value or %d (one per spatial axis), got %v", n, win)
	}
	for len(windows) < n {
		windows = append(windows, nil)
	}
	windows = windows[:n]
	for ax := 0; ax < n; ax++ {
		s, w := sig[min(ax, len(sig)-1)], win[min(ax, len(win)-1)]
		switch {
		case !(s >= 0):
			return windows, fmt.Sprintf("`sigma` must have non-negative values, got %g for sample: %d, axis: %d.", s, sample, ax)
		case w < 0:
			return windows, fmt.Sprintf("`window_size` must have non-negative values, got %d for sample: %d, axis : %d.", int(w), sample, ax)
		case s == 0 && w == 0:
			return windows, fmt.Sprintf("`sigma` and `window_size` shouldn't be 0 at the same time for sample: %d, axis: %d.", sample, ax)
		case s > maxBlurRadius/3 || w > 2*maxBlurRadius+1: // before int(w): 1e30 is not even
			return windows, fmt.Sprintf("sigma %g or window_size %g is larger than godali's limit (sigma %d, window %d)", s, w, maxBlurRadius/3, 2*maxBlurRadius+1)
		case w != math.Trunc(w) || (w > 0 && int(w)%2 == 0):
			return windows, fmt.Sprintf("Kernel window should have odd length, got: %g.", w)
		}
		taps := blurTaps(s, int(w))
		if cap(windows[ax]) < taps {
			windows[ax] = make([]float32, taps)
		}
		windows[ax] = windows[ax][:taps]
		imaging.GaussianWindow(windows[ax], blurSigma(s, int(w)))
	}
	return windows, ""
}

// blurTaps and blurSigma complete an axis's (sigma, window) the way DALI does.
func blurTaps(sigma float64, window int) int {
	if window > 0 {
		return window
	}
	return 2*int(math.Ceil(3*sigma)) + 1
}

func blurSigma(sigma float64, window int) float64 {
	if sigma > 0 {
		return sigma
	}
	r := float64(window-1) / 2
	return (r-1)*0.3 + 0.8
}

func (o *gaussianBlurOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 || m.DType == engine.Bool {
		return nil, o.args.Invalidf("input must be a numeric tensor of known rank, got %s %v", m.DType, m.Shape)
	}
	o.out = m.DType
	if o.args.Given("dtype") {
		o.out = o.args.DType("dtype")
		if o.out != m.DType && o.out != engine.Float32 {
			return nil, o.args.Errorf("dtype", "expected the input's type (%s) or FLOAT, got %s", m.DType, o.out)
		}
	}
	skip, spatial, msg := blurLayout(m.Layout, len(m.Shape))
	if msg != "" {
		return nil, o.args.Invalidf("%s", msg)
	}
	o.skip, o.spatial = skip, spatial
	o.fast = m.Layout == "HWC" && m.DType == engine.UInt8
	o.imOut = imaging.UInt8
	if o.out == engine.Float32 {
		o.imOut = imaging.Float32
	}
	if !o.perArg {
		var wins [][]float32
		var win []float64
		for _, w := range o.args.Ints("window_size") {
			win = append(win, float64(w))
		}
		wins, msg = blurWindows(nil, o.args.Floats("sigma"), win, spatial, 0)
		if msg != "" {
			return nil, o.args.Invalidf("%s", msg)
		}
		o.windows = wins
	}
	return []engine.TensorMeta{{DType: o.out, Layout: m.Layout, Shape: append([]int{}, m.Shape...)}}, nil
}

func (o *gaussianBlurOp) NewWorkerState() any { return &gaussianBlurState{} }

func (o *gaussianBlurOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *gaussianBlurOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*gaussianBlurState)
	wins := o.windows
	if o.perArg {
		var err error
		if st.sig, err = o.args.FloatsAt(ws, "sigma", st.sig); err != nil {
			return err
		}
		if st.win, err = o.args.FloatsAt(ws, "window_size", st.win); err != nil {
			return err
		}
		var msg string
		if st.windows, msg = blurWindows(st.windows, st.sig, st.win, o.spatial, ws.Sample); msg != "" {
			return o.args.DataErrorf(ws, "%s", msg)
		}
		wins = st.windows
	}
	in, out := ws.In[0], ws.Out[0]
	if o.fast {
		return imaging.GaussianBlur(out.Data, in.Data, in.Shape[1], in.Shape[0], in.Shape[2], wins[1], wins[0], o.imOut, &st.scratch)
	}
	n := numElements(in.Shape)
	if n == 0 {
		return nil
	}
	st.a, st.b = growFloats(st.a, n), growFloats(st.b, n)
	ld := load(in)
	for i := range st.a {
		st.a[i] = float32(ld(i))
	}
	src, dst := st.a, st.b
	for ax := 0; ax < o.spatial; ax++ {
		d := o.skip + ax
		outer, inner := 1, 1
		for _, e := range in.Shape[:d] {
			outer *= e
		}
		for _, e := range in.Shape[d+1:] {
			inner *= e
		}
		imaging.ConvolveAxis(dst, src, outer, in.Shape[d], inner, wins[ax])
		src, dst = dst, src
	}
	if o.out == engine.Float32 {
		for i, v := range src {
			binary.LittleEndian.PutUint32(out.Data[4*i:], math.Float32bits(v))
		}
		return nil
	}
	sz := o.out.Size()
	for i, v := range src {
		engine.WriteScalarSat(out.Data[i*sz:], o.out, float64(v))
	}
	return nil
}

func growFloats(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}
