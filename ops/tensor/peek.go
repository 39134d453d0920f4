package tensor

import (
	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "peek_image_shape",
		Doc: "Outputs the shape (height, width, channels) an encoded image will have once decoded, " +
			"from its header, without decoding it (DALI's fn.peek_image_shape). Channels follow " +
			"image_type (3 for RGB, BGR and YCbCr, 1 for GRAY; ANY_DATA: the image's own, 1 for grey, 4 with alpha, else 3), as the decoders produce them.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"shape"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "dtype", Type: engine.ArgDType, Default: "INT64", Doc: "output type"},
			{Name: "adjust_orientation", Type: engine.ArgBool, Default: true, Doc: "swap height and width when the EXIF orientation rotates the image by 90 degrees"},
			{Name: "image_type", Type: engine.ArgImageType, Default: "RGB", Doc: "the colour format the image would be decoded to"},
		},
	})
	engine.RegisterBackend("peek_image_shape", "cpu", func(a *engine.Args) (engine.Operator, error) {
		d := a.DType("dtype")
		if d == engine.Bool {
			return nil, a.Errorf("dtype", "must be a numeric type, got BOOL")
		}
		it, err := codec.ParseImageType(a.String("image_type"))
		if err != nil {
			return nil, a.Errorf("image_type", "%v", err)
		}
		channels := it.Out.Channels() // YCbCr: 3, as the decoders make it from RGB
		if it.AnyData {
			channels = 0 // the image's own (ownChannels)
		}
		return &peekOp{args: a, dtype: d, channels: channels, orient: a.Bool("adjust_orientation")}, nil
	})
	engine.RegisterVariant("experimental.peek_image_shape", "peek_image_shape", "DALI's experimental name of peek_image_shape. ")
}

type peekOp struct {
	args     *engine.Args
	dtype    engine.DType
	channels int
	orient   bool
}

type peekState struct{ dec *codec.Decoder }

func (s *peekState) Close() { s.dec.Close() }

func (o *peekOp) NewWorkerState() any { return &peekState{dec: codec.NewDecoder()} }

func (o *peekOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in[0].DType != engine.UInt8 || (in[0].Shape != nil && len(in[0].Shape) != 1) {
		return nil, o.args.Invalidf("input must be encoded bytes (uint8, 1-D), e.g. from readers.file; got %s %v", in[0].DType, in[0].Shape)
	}
	return []engine.TensorMeta{{DType: o.dtype, Shape: []int{3}}}, nil
}

func (o *peekOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].DType = o.dtype
	ws.Out[0].SetShape(3)
	return nil
}

func (o *peekOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*peekState)
	info, err := st.dec.Probe(ws.In[0].Data)
	if err != nil {
		return o.args.DataErrorf(ws, "cannot read the image header: %v", err)
	}
	w, h := info.OrientedSize(o.orient)
	c := o.channels
	if c == 0 {
		c = ownChannels(info)
	}
	sz := o.dtype.Size()
	for i, v := range []int{h, w, c} {
		engine.WriteScalar(ws.Out[0].Data[i*sz:], o.dtype, float64(v))
	}
	return nil
}

// ownChannels is image_type ANY_DATA's channel count, as DALI's peek_image_shape gives
// it (DALI's test_peek_shape): one for grey images, four with alpha, three otherwise.
func ownChannels(info codec.Info) int {
	switch info.ColorSpace {
	case "Gray":
		return 1
	case "RGBA", "YCbCrA":
		return 4
	}
	return 3
}
