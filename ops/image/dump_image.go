package image

import (
	"fmt"
	"os"

	"github.com/godali/godali/engine"
)

// dump_image is DALI's debugging operator: it writes each HWC uint8 sample to a PNM
// file (P6 for 3 channels, P5 for 1) in the working directory and passes it through.
func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "dump_image",
		Doc:       "Writes each image of the batch to <suffix>-<sample index>.ppm (PNM: P6 for 3 channels, P5 for 1) in the working directory, and passes the images through (DALI's fn.dump_image, for debugging). Each batch overwrites the previous one's files.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true,
		InputLayouts: []string{"HWC"}, InputDtypes: []engine.DType{engine.UInt8},
		Args: []engine.ArgSpec{
			{Name: "suffix", Type: engine.ArgString, Default: "", Doc: "the start of the file names"},
			{Name: "input_layout", Type: engine.ArgString, Default: "HWC", Doc: "the images' layout; only HWC is supported (as in DALI)"},
		},
	})
	engine.RegisterBackend("dump_image", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if l := a.String("input_layout"); l != "HWC" {
			return nil, a.Errorf("input_layout", "only HWC is supported, got %q", l)
		}
		return &dumpImageOp{args: a, suffix: a.String("suffix")}, nil
	})
}

type dumpImageOp struct {
	args   *engine.Args
	suffix string
}

func (o *dumpImageOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if c := in[0].Shape[2]; c != 1 && c != 3 && c >= 0 {
		return nil, o.args.Invalidf("PNM files hold 1 or 3 channels, the images have %d", c)
	}
	return []engine.TensorMeta{in[0]}, nil
}

func (o *dumpImageOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *dumpImageOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	if c != 1 && c != 3 {
		return o.args.DataErrorf(ws, "PNM files hold 1 or 3 channels, the image has %d", c)
	}
	pix := in.Data[:h*w*c]
	copy(ws.Out[0].Data, pix)
	path := fmt.Sprintf("%s-%d.ppm", o.suffix, ws.Sample)
	magic := "P6"
	if c == 1 {
		magic = "P5"
	}
	f, err := os.Create(path)
	if err != nil {
		return o.args.DataErrorf(ws, "dump_image: %v", err)
	}
	_, err = fmt.Fprintf(f, "%s\n%d %d\n255\n", magic, w, h)
	if err == nil {
		_, err = f.Write(pix)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return o.args.DataErrorf(ws, "dump_image: writing %s: %v", path, err)
	}
	return nil
}
