package image

import (
	"math"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "jpeg_compression_distortion",
		Doc: "Introduces JPEG compression artifacts into HWC uint8 RGB images, as DALI does: each " +
			"image is encoded with libjpeg at quality (baseline, 4:2:0 chroma subsampling, the " +
			"standard tables scaled by quality) and decoded again. quality may come per sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "quality", Type: engine.ArgInt, Default: 50, TensorInput: true, Doc: "JPEG quality, 1 to 100"},
		},
	})
	engine.RegisterBackend("jpeg_compression_distortion", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if !a.AnyPerSample("quality") {
			if q := a.Int("quality"); q < 1 || q > 100 {
				return nil, a.Errorf("quality", "expected 1 to 100, got %d", q)
			}
		}
		return &jpegDistortionOp{args: a}, nil
	})
}

type jpegDistortionOp struct{ args *engine.Args }

// jpegDistortionState is a worker's libjpeg encoder and decoder, made on first use.
type jpegDistortionState struct {
	d *codec.JPEGDistorter
}

func (s *jpegDistortionState) Close() {
	if s.d != nil {
		s.d.Close()
		s.d = nil
	}
}

func (o *jpegDistortionOp) NewWorkerState() any { return &jpegDistortionState{} }

func (o *jpegDistortionOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return inferRGB(o.args, in[0])
}

func (o *jpegDistortionOp) Setup(ws *engine.Workspace) error {
	return setupRGB(o.args, ws)
}

func (o *jpegDistortionOp) Run(ws *engine.Workspace) error {
	q, err := o.args.FloatAt(ws, "quality")
	if err != nil {
		return err
	}
	if !(q >= 1 && q <= 100) || q != math.Trunc(q) {
		return o.args.ArgDataErrorf(ws, "quality", "expected an integer from 1 to 100, got %g", q)
	}
	in, out := ws.In[0], ws.Out[0]
	h, w := in.Shape[0], in.Shape[1]
	if h == 0 || w == 0 {
		return nil
	}
	st := ws.State.(*jpegDistortionState)
	if st.d == nil {
		var err error
		if st.d, err = codec.NewJPEGDistorter(); err != nil {
			return o.args.DataErrorf(ws, "%v", err)
		}
	}
	if err := st.d.RoundTrip(out.Data, in.Data, w, h, int(q)); err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	return nil
}

// inferRGB is Infer for the operators that map an RGB HWC uint8 image to one of the same
// shape (color operations that need exactly 3 channels).
func inferRGB(a *engine.Args, in engine.TensorMeta) ([]engine.TensorMeta, error) {
	c := in.Shape[2]
	if c != 3 && c >= 0 {
		return nil, a.Invalidf("input must be RGB (3 channels), got %d", c)
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "HWC", Shape: in.Shape}}, nil
}

// setupRGB is Setup for the same operators: the sample must have 3 channels; the output
// takes the input's shape.
func setupRGB(a *engine.Args, ws *engine.Workspace) error {
	if ws.In[0].Shape[2] != 3 {
		return a.DataErrorf(ws, "input must be RGB (3 channels), got shape %v", ws.In[0].Shape)
	}
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}
