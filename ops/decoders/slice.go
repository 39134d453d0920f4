package decoders

import (
	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
	"github.com/godali/godali/ops/internal/window"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.image_slice",
		Doc: "Decodes the window of each image given by the anchor and shape inputs (e.g. from random_bbox_crop: " +
			"relative (x, y) values by default) or the named start/end/shape arguments, decoding only that " +
			"region when it lies inside the image.",
		MinInputs: 1, MaxInputs: 3, Outputs: []string{"images"},
		Args: append(append([]engine.ArgSpec{}, decoderArgs...), window.SliceArgs...),
	})
	engine.RegisterBackend("decoders.image_slice", "cpu", newSliceDecoder)
}

type sliceDecoder struct {
	*cpuDecoder
	slice *window.Slice
	fill  byte
}

type sliceState struct {
	decoderState
	win     window.SliceWindow
	pad     bool
	roi     codec.Rect
	full    []byte // the whole decoded image, for windows padded past its edges
	fw, fh  int
	scratch []byte
}

func newSliceDecoder(a *engine.Args) (engine.Operator, error) {
	if err := uint8Only(a, "decoders.image_slice"); err != nil {
		return nil, err
	}
	d, err := newCPUDecoder(a, false)
	if err != nil {
		return nil, err
	}
	s, err := window.ParseSlice(a)
	if err != nil {
		return nil, err
	}
	s.Image = true
	f := s.Fill[0]
	if !(f >= 0 && f <= 255) {
		return nil, a.Errorf("fill_values", "expected a value in [0, 255], got %v", f)
	}
	return &sliceDecoder{cpuDecoder: d.(*cpuDecoder), slice: s, fill: byte(f)}, nil
}

func (d *sliceDecoder) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := d.slice.CheckInputs(in); err != nil {
		return nil, err
	}
	return d.cpuDecoder.Infer(in[:1])
}

// SetConsumer: slices are decoded at full resolution.
func (d *sliceDecoder) SetConsumer(engine.Operator) {}

func (d *sliceDecoder) NewWorkerState() any {
	return &sliceState{decoderState: decoderState{dec: codec.NewDecoder()}}
}

func (d *sliceDecoder) Setup(ws *engine.Workspace) error {
	st := ws.State.(*sliceState)
	w, h, err := d.probe(ws, &st.decoderState)
	if err != nil {
		return err
	}
	data, info := ws.In[0].Data, st.info
	// The channel axis is whole: one channel stands in for it (a relative window of it
	// is then [0, 1)).
	if err := d.slice.Window(ws, []int{h, w, 1}, "HWC", &st.win); err != nil {
		return err
	}
	if st.win.Start[2] != 0 || st.win.Size[2] != 1 {
		return d.args.DataErrorf(ws, "decoders.image_slice cuts height and width only; the window of the channel axis must be whole")
	}
	r := codec.Rect{X: st.win.Start[1], Y: st.win.Start[0], W: st.win.Size[1], H: st.win.Size[0]}
	pad := st.win.OutOfBounds
	if r.W < 1 || r.H < 1 {
		return d.args.DataErrorf(ws, "the slice %s of the %dx%d image is empty", st.win.String(), w, h)
	}
	st.roi, st.pad = r, pad
	if ws.Limits.MaxImagePixels > 0 && int64(r.W)*int64(r.H) > ws.Limits.MaxImagePixels {
		return engine.Errorf(engine.StatusData, "slice is %dx%d pixels, more than max_image_pixels=%d", r.W, r.H, ws.Limits.MaxImagePixels)
	}
	if !pad {
		st.opt.ROI = r
	}
	ow, oh, oc, err := st.dec.OutputSize(data, info, st.opt)
	if err != nil {
		return err
	}
	if pad {
		st.fw, st.fh = ow, oh
		if need := ow * oh * oc; cap(st.full) < need {
			st.full = make([]byte, need)
		} else {
			st.full = st.full[:need]
		}
		ws.Out[0].SetShape(r.H, r.W, oc)
		return nil
	}
	ws.Out[0].SetShape(oh, ow, oc)
	return nil
}

func (d *sliceDecoder) Run(ws *engine.Workspace) error {
	st := ws.State.(*sliceState)
	if !st.pad {
		return d.decodeTo(&st.decoderState, ws.In[0].Data, st.opt, ws.Out[0].Data, engine.UInt8)
	}
	if err := d.decodeTo(&st.decoderState, ws.In[0].Data, st.opt, st.full, engine.UInt8); err != nil {
		return err
	}
	c := st.opt.Out.Channels() // the padding keeps fill_values
	return imaging.Crop(ws.Out[0].Data, st.full, st.fw, st.fh, c, st.roi.X, st.roi.Y, st.roi.W, st.roi.H, d.fill)
}
