package image

import (
	"fmt"
	"os"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "dump_image",
		Doc: "Passes uint8 images through unchanged and writes each to the current directory as " +
			"a binary PPM (3 channels) or PGM (1 channel), for debugging, as DALI's dump_image: " +
			"<index in the batch>-<suffix>-0.ppm (or .pgm), DALI's names: each batch overwrites the " +
			"previous one's files. A file that cannot be written is an error naming it.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true, InputDtypes: u8,
		Args: []engine.ArgSpec{
			{Name: "input_layout", Type: engine.ArgString, Default: "HWC", Doc: "layout of the images: HWC or CHW"},
			{Name: "suffix", Type: engine.ArgString, Default: "", Doc: "added to the file names, before the extension"},
		},
	})
	engine.RegisterBackend("dump_image", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if l := a.String("input_layout"); l != "HWC" && l != "CHW" {
			return nil, a.Errorf("input_layout", "expected HWC or CHW, got %q", l)
		}
		return &dumpImageOp{args: a, chw: a.String("input_layout") == "CHW"}, nil
	})
}

type dumpImageOp struct {
	args *engine.Args
	chw  bool
}

type dumpImageState struct{ buf []byte }

func (o *dumpImageOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if len(in[0].Shape) != 3 {
		return nil, o.args.Invalidf("input must be 3-D images (%s), got shape %v", o.args.String("input_layout"), in[0].Shape)
	}
	return []engine.TensorMeta{in[0]}, nil
}

func (o *dumpImageOp) NewWorkerState() any { return &dumpImageState{} }

func (o *dumpImageOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	ws.Out[0].Layout = ws.In[0].Layout
	return nil
}

func (o *dumpImageOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	n := in.NumBytes()
	copy(out.Data, in.Data[:n])
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	if o.chw {
		c, h, w = in.Shape[0], in.Shape[1], in.Shape[2]
	}
	if c != 1 && c != 3 {
		return o.args.DataErrorf(ws, "dump_image writes images of 1 or 3 channels, got %d (shape %v)", c, in.Shape)
	}
	magic, ext := "P6", "ppm"
	if c == 1 {
		magic, ext = "P5", "pgm"
	}
	st := ws.State.(*dumpImageState)
	st.buf = fmt.Appendf(st.buf[:0], "%s\n%d %d\n255\n", magic, w, h)
	if o.chw {
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				for k := 0; k < c; k++ {
					st.buf = append(st.buf, in.Data[(k*h+y)*w+x])
				}
			}
		}
	} else {
		st.buf = append(st.buf, in.Data[:n]...)
	}
	// DALI's CPU name: the sample's index in the batch, the suffix, the input's index.
	name := fmt.Sprintf("%d-%s-0.%s", ws.Sample, o.args.String("suffix"), ext)
	if err := os.WriteFile(name, st.buf, 0o644); err != nil {
		return o.args.DataErrorf(ws, "writing %s: %v", name, err)
	}
	return nil
}
