package image

import (
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// maxBlurRadius bounds the window (a sigma of 1000 pixels is already a flat image).
const maxBlurRadius = 3000

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "gaussian_blur",
		Doc: "Blurs HWC uint8 images with a separable Gaussian, borders reflected (101), as DALI. " +
			"With only sigma the window is 2 * ceil(3 * sigma) + 1 taps; with only window_size, " +
			"sigma = ((window_size - 1) / 2 - 1) * 0.3 + 0.8. Each takes one value or (height, width). " +
			"sigma may come per sample (one value, or (height, width)).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "sigma", Type: engine.ArgFloatList, Default: []float64{0}, TensorInput: true, Doc: "standard deviation of the Gaussian, in pixels: one value or (height, width); 0 = from window_size"},
			{Name: "window_size", Type: engine.ArgIntList, Default: []int64{0}, Doc: "taps of the window (odd): one value or (height, width); 0 = from sigma"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type, UINT8 or FLOAT; default the input's (UINT8)"},
		},
	})
	engine.RegisterBackend("gaussian_blur", "cpu", func(a *engine.Args) (engine.Operator, error) { return newGaussianBlur(a) })
}

type gaussianBlurOp struct {
	args    *engine.Args
	sigma   [2]float64 // height, width
	window  [2]int     // 0 = from sigma
	perSig  bool
	out     engine.DType
	imOut   imaging.DType
	windows [2][]float32 // the constant windows, when sigma is not per sample
}

type gaussianBlurState struct {
	scratch imaging.Scratch
	wy, wx  []float32
}

func newGaussianBlur(a *engine.Args) (*gaussianBlurOp, error) {
	out, imOut, err := colorOutType(a)
	if err != nil {
		return nil, err
	}
	o := &gaussianBlurOp{args: a, out: out, imOut: imOut}
	o.perSig = a.AnyPerSample("sigma")
	ws, err := a.IntPair("window_size")
	if err != nil {
		return nil, err
	}
	for _, n := range ws {
		if n < 0 || (n > 0 && n%2 == 0) || n > 2*maxBlurRadius+1 {
			return nil, a.Errorf("window_size", "expected 0 or an odd number of taps up to %d, got %v", 2*maxBlurRadius+1, a.Ints("window_size"))
		}
	}
	o.window = ws
	if o.perSig {
		return o, nil
	}
	sig, err := a.FloatPair("sigma")
	if err != nil {
		return nil, err
	}
	for i, s := range sig {
		if !(s >= 0) || s > maxBlurRadius/3 {
			return nil, a.Errorf("sigma", "expected values in [0, %d], got %v", maxBlurRadius/3, a.Floats("sigma"))
		}
		if s == 0 && o.window[i] == 0 {
			return nil, a.Errorf("sigma", "give sigma or window_size (> 0) for every axis, got sigma %v and window_size %v", a.Floats("sigma"), a.Ints("window_size"))
		}
	}
	o.sigma = sig
	for i := range o.windows {
		o.windows[i] = make([]float32, blurTaps(o.sigma[i], o.window[i]))
		imaging.GaussianWindow(o.windows[i], blurSigma(o.sigma[i], o.window[i]))
	}
	return o, nil
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
	c := in[0].Shape[2]
	return []engine.TensorMeta{{DType: o.out, Layout: "HWC", Shape: []int{in[0].Shape[0], in[0].Shape[1], c}}}, nil
}

func (o *gaussianBlurOp) NewWorkerState() any { return &gaussianBlurState{} }

func (o *gaussianBlurOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *gaussianBlurOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*gaussianBlurState)
	wy, wx := o.windows[0], o.windows[1]
	if o.perSig {
		sig, err := o.args.FloatPairAt(ws, "sigma")
		if err != nil {
			return err
		}
		for i, s := range sig {
			if !(s >= 0) || s > maxBlurRadius/3 || (s == 0 && o.window[i] == 0) {
				return o.args.ArgDataErrorf(ws, "sigma", "expected values in (0, %d] (or window_size), got %v", maxBlurRadius/3, sig)
			}
		}
		st.wy = growFloats(st.wy, blurTaps(sig[0], o.window[0]))
		st.wx = growFloats(st.wx, blurTaps(sig[1], o.window[1]))
		imaging.GaussianWindow(st.wy, blurSigma(sig[0], o.window[0]))
		imaging.GaussianWindow(st.wx, blurSigma(sig[1], o.window[1]))
		wy, wx = st.wy, st.wx
	}
	in := ws.In[0]
	return imaging.GaussianBlur(ws.Out[0].Data, in.Data, in.Shape[1], in.Shape[0], in.Shape[2], wx, wy, o.imOut, &st.scratch)
}

func growFloats(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}
