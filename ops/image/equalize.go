package image

import (
	"strings"

	"github.com/godali/godali/engine"
)

// equalizeLayouts are the layouts equalize takes: grayscale, channel-last and
// channel-first images and sequences of them. Without a layout, 2-D is HW and 3-D HWC.
var equalizeLayouts = []string{"HW", "HWC", "CHW", "FHW", "FHWC", "FCHW"}

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "equalize",
		Doc: "Equalizes the histogram of every channel of uint8 images (HW, HWC or CHW, any " +
			"number of channels; sequences frame by frame), as DALI's equalize" +
			" (OpenCV's equalizeHist per channel).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true,
		InputLayouts: equalizeLayouts, InputDtypes: u8, InputDoc: fromDecoder,
	})
	engine.RegisterBackend("equalize", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &equalizeOp{args: a}, nil
	})
	engine.RegisterVariant("experimental.equalize", "equalize", "DALI's experimental name of equalize. ")
}

type equalizeOp struct {
	args   *engine.Args
	layout string
}

func (o *equalizeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	o.layout = in[0].Layout
	return []engine.TensorMeta{in[0]}, nil
}

func (o *equalizeOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *equalizeOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	copy(out.Data, in.Data)
	equalizeTensor(out.Data[:len(in.Data)], in.Shape, o.layout)
	return nil
}

// equalizeTensor equalizes every channel of every frame of a uint8 tensor in place. The
// layout (one of equalizeLayouts, or "" for HW / HWC) says where the frame and channel
// axes are.
func equalizeTensor(pix []byte, shape []int, layout string) {
	if layout == "" {
		layout = "HWC"[:len(shape)]
	}
	frames := 1
	if strings.HasPrefix(layout, "F") {
		frames, shape, layout = shape[0], shape[1:], layout[1:]
	}
	channels, plane := 1, 1
	for i, l := range layout {
		if l == 'C' {
			channels = shape[i]
		} else {
			plane *= shape[i]
		}
	}
	for f := 0; f < frames; f++ {
		frame := f * plane * channels
		for ch := 0; ch < channels; ch++ {
			if layout[0] == 'C' { // planar: each channel's values are contiguous
				equalizePlane(pix, frame+ch*plane, 1, plane)
			} else {
				equalizePlane(pix, frame+ch, channels, plane)
			}
		}
	}
}
