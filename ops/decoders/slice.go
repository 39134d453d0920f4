package decoders

import (
	"math"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// SliceArgs are the arguments of DALI's slice operators (slice, decoders.image_slice)
// that godali takes: the window comes from the anchor and shape inputs.
var SliceArgs = []engine.ArgSpec{
	{Name: "normalized_anchor", Type: engine.ArgBool, Default: true, Doc: "the anchor input is relative to the image size (false: pixels)"},
	{Name: "normalized_shape", Type: engine.ArgBool, Default: true, Doc: "the shape input is relative to the image size (false: pixels)"},
	{Name: "axis_names", Type: engine.ArgString, Default: "WH", Doc: "order of the anchor and shape values: WH (x, y, as random_bbox_crop gives them) or HW"},
	{Name: "out_of_bounds_policy", Type: engine.ArgString, Default: "error", Doc: "a window leaving the image: error, pad (with fill_values) or trim_to_shape"},
	{Name: "fill_values", Type: engine.ArgFloatList, Default: []float64{0}, Doc: "padding value (one byte value)"},
}

// Slice is a parsed slice specification.
type Slice struct {
	args       *engine.Args
	normAnchor bool
	normShape  bool
	hw         bool
	policy     string
	Fill       byte
}

// ParseSlice checks SliceArgs.
func ParseSlice(a *engine.Args) (*Slice, error) {
	s := &Slice{args: a, normAnchor: a.Bool("normalized_anchor"), normShape: a.Bool("normalized_shape"), policy: a.String("out_of_bounds_policy")}
	switch a.String("axis_names") {
	case "WH":
	case "HW":
		s.hw = true
	default:
		return nil, a.Errorf("axis_names", "expected WH or HW, got %q", a.String("axis_names"))
	}
	switch s.policy {
	case "error", "pad", "trim_to_shape":
	default:
		return nil, a.Errorf("out_of_bounds_policy", "expected error, pad or trim_to_shape, got %q", s.policy)
	}
	if f := a.Floats("fill_values"); len(f) > 0 {
		if !(f[0] >= 0 && f[0] <= 255) {
			return nil, a.Errorf("fill_values", "expected a value in [0, 255], got %v", f[0])
		}
		s.Fill = byte(f[0])
	}
	return s, nil
}

// CheckInputs checks the anchor and shape inputs' metadata at build time.
func (s *Slice) CheckInputs(in []engine.TensorMeta) error {
	for k, name := range []string{"anchor", "shape"} {
		m := in[k+1]
		if m.DType.Size() == 0 || len(m.Shape) != 1 || (m.Shape[0] != 2 && m.Shape[0] != -1) {
			return s.args.Invalidf("%s (input %d) must hold 2 numbers per sample (e.g. from random_bbox_crop), got %s %v", name, k+1, m.DType, m.Shape)
		}
	}
	return nil
}

// Window returns the slice of a w x h image the sample's anchor and shape inputs
// (ws.In[1], ws.In[2]) describe, in pixels, as DALI computes it: start =
// round(anchor), end = round(anchor + shape) (relative values scaled by the image
// size first). pad reports that the window leaves the image and is to be padded;
// under trim_to_shape it is cut to the image, under error that is an error.
func (s *Slice) Window(ws *engine.Workspace, w, h int) (r codec.Rect, pad bool, err error) {
	var v [2][2]float64 // anchor, shape; each (x, y)
	for k := 0; k < 2; k++ {
		t := ws.In[k+1]
		if t.NumBytes() != 2*t.DType.Size() || len(t.Data) < t.NumBytes() {
			return r, false, s.args.DataErrorf(ws, "%s has shape %v; expected 2 numbers", []string{"anchor", "shape"}[k], t.Shape)
		}
		a, b := engine.ReadScalar(t.Data, t.DType), engine.ReadScalar(t.Data[t.DType.Size():], t.DType)
		if s.hw {
			a, b = b, a
		}
		v[k] = [2]float64{a, b}
	}
	ext := [2]float64{float64(w), float64(h)}
	var start, end [2]int
	for d := 0; d < 2; d++ {
		a, sh := v[0][d], v[1][d]
		if s.normAnchor {
			a *= ext[d]
		}
		if s.normShape {
			sh *= ext[d]
		}
		lo, hi := math.Round(a), math.Round(a+sh)
		if math.IsNaN(lo) || math.IsNaN(hi) || math.Abs(lo) > 1<<30 || math.Abs(hi) > 1<<30 || hi < lo {
			return r, false, s.args.DataErrorf(ws, "slice anchor %v and shape %v do not describe a window of the %dx%d image", v[0], v[1], w, h)
		}
		start[d], end[d] = int(lo), int(hi)
	}
	out := start[0] < 0 || start[1] < 0 || end[0] > w || end[1] > h
	if out {
		switch s.policy {
		case "error":
			return r, false, s.args.DataErrorf(ws, "the slice [%d, %d) x [%d, %d) leaves the %dx%d image (out_of_bounds_policy=\"error\"; use \"pad\" or \"trim_to_shape\")", start[0], end[0], start[1], end[1], w, h)
		case "trim_to_shape":
			start[0], start[1] = max(start[0], 0), max(start[1], 0)
			end[0], end[1] = min(end[0], w), min(end[1], h)
			end[0], end[1] = max(end[0], start[0]), max(end[1], start[1])
			out = false
		}
	}
	r = codec.Rect{X: start[0], Y: start[1], W: end[0] - start[0], H: end[1] - start[1]}
	if r.W < 1 || r.H < 1 {
		return r, false, s.args.DataErrorf(ws, "the slice [%d, %d) x [%d, %d) of the %dx%d image is empty", start[0], end[0], start[1], end[1], w, h)
	}
	return r, out, nil
}

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.image_slice",
		Doc: "Decodes the window of each image given by the anchor and shape inputs (e.g. from random_bbox_crop: " +
			"relative (x, y) values by default), decoding only that region when it lies inside the image.",
		MinInputs: 3, MaxInputs: 3, Outputs: []string{"images"},
		Args: append(append([]engine.ArgSpec{}, decoderArgs...), SliceArgs...),
	})
	engine.RegisterBackend("decoders.image_slice", "cpu", newSliceDecoder)
}

type sliceDecoder struct {
	*cpuDecoder
	slice *Slice
}

type sliceState struct {
	decoderState
	pad     bool
	roi     codec.Rect
	full    []byte // the whole decoded image, for windows padded past its edges
	fw, fh  int
	scratch []byte
}

func newSliceDecoder(a *engine.Args) (engine.Operator, error) {
	d, err := newCPUDecoder(a, false)
	if err != nil {
		return nil, err
	}
	s, err := ParseSlice(a)
	if err != nil {
		return nil, err
	}
	return &sliceDecoder{cpuDecoder: d.(*cpuDecoder), slice: s}, nil
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
	r, pad, err := d.slice.Window(ws, w, h)
	if err != nil {
		return err
	}
	return d.setupWindow(ws, st, r, pad)
}

// setupWindow sets the output shape for the window r of the probed image (pad: r leaves
// the image, which is decoded whole and padded).
func (d *sliceDecoder) setupWindow(ws *engine.Workspace, st *sliceState, r codec.Rect, pad bool) error {
	data, info := ws.In[0].Data, st.info
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
		_, _, _, err := st.dec.Decode(ws.In[0].Data, st.info, st.opt, ws.Out[0].Data)
		return err
	}
	_, _, c, err := st.dec.Decode(ws.In[0].Data, st.info, st.opt, st.full)
	if err != nil {
		return err
	}
	return imaging.Crop(ws.Out[0].Data, st.full, st.fw, st.fh, c, st.roi.X, st.roi.Y, st.roi.W, st.roi.H, d.slice.Fill)
}
