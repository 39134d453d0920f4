package window

import (
	"fmt"
	"math"
	"strings"

	"github.com/godali/godali/engine"
)

// SliceArgs are the arguments of DALI's slice operators (slice, decoders.image_slice):
// the window comes from the anchor and shape inputs, or from the named start / end /
// shape arguments (absolute or rel_*), along the axes given by axis_names or axes.
var SliceArgs = []engine.ArgSpec{
	{Name: "normalized_anchor", Type: engine.ArgBool, Default: true, Doc: "a floating-point anchor input is relative to the extent (false: absolute); an integer one is always absolute"},
	{Name: "normalized_shape", Type: engine.ArgBool, Default: true, Doc: "a floating-point shape input is relative to the extent (false: absolute); an integer one is always absolute"},
	{Name: "axis_names", Type: engine.ArgString, Default: "WH", Doc: "the axes the anchor and shape values refer to, in their order, as layout letters; written explicitly it wins over axes (default WH: (x, y), as random_bbox_crop gives them)"},
	{Name: "axes", Type: engine.ArgIntList, Default: []int64{1, 0}, TensorInput: true, Doc: "the axes the anchor and shape values refer to, as indices (negative count from the end; empty: all); used when axis_names is not given; may come per sample"},
	{Name: "start", Type: engine.ArgFloatList, TensorInput: true, Doc: "absolute start of the window, one value per axis (instead of the anchor input)"},
	{Name: "rel_start", Type: engine.ArgFloatList, TensorInput: true, Doc: "start relative to the extent, one value per axis"},
	{Name: "end", Type: engine.ArgFloatList, TensorInput: true, Doc: "absolute end (exclusive) of the window, one value per axis"},
	{Name: "rel_end", Type: engine.ArgFloatList, TensorInput: true, Doc: "end relative to the extent"},
	{Name: "shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "absolute extent of the window, one value per axis"},
	{Name: "rel_shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "extent relative to the input's extent"},
	{Name: "out_of_bounds_policy", Type: engine.ArgString, Default: "error", Doc: "a window leaving the input: error, pad (with fill_values) or trim_to_shape"},
	{Name: "fill_values", Type: engine.ArgFloatList, Default: []float64{0}, Doc: "padding value: one, or one per channel (the layout's C, else the last axis)"},
}

// Slice is a parsed slice specification (DALI's SliceAttr): per sample it gives the
// window of an N-dimensional input.
type Slice struct {
	args       *engine.Args
	normAnchor bool
	normShape  bool
	policy     string
	named      bool // the window comes from start/end/shape arguments, not from inputs
	Fill       []float64
	// Image says the input is a decoded image (decoders.image_slice): a window out of
	// it is reported in the decoders' words.
	Image bool
}

// SliceWindow is one sample's window, in elements, for every axis of the input:
// start may be negative and start+size may pass the extent when OutOfBounds (policy
// "pad").
type SliceWindow struct {
	Start, Size []int
	OutOfBounds bool
	axes        []int
	anchor, sh  []float64
	named       [6][]float64
}

var sliceStartArgs = []string{"start", "rel_start"}
var sliceEndArgs = []string{"end", "rel_end", "shape", "rel_shape"}

// ParseSlice checks SliceArgs.
func ParseSlice(a *engine.Args) (*Slice, error) {
	s := &Slice{args: a, normAnchor: a.Bool("normalized_anchor"), normShape: a.Bool("normalized_shape"), policy: a.String("out_of_bounds_policy"), Fill: a.Floats("fill_values")}
	switch s.policy {
	case "error", "pad", "trim_to_shape":
	default:
		return nil, a.Errorf("out_of_bounds_policy", "expected error, pad or trim_to_shape, got %q", s.policy)
	}
	if len(s.Fill) == 0 {
		s.Fill = []float64{0}
	}
	var starts, ends []string
	for _, n := range sliceStartArgs {
		if a.Given(n) {
			starts = append(starts, n)
		}
	}
	for _, n := range sliceEndArgs {
		if a.Given(n) {
			ends = append(ends, n)
		}
	}
	if len(starts) > 1 {
		return nil, a.Errorf("start", `"start" and "rel_start" arguments are mutually exclusive`)
	}
	if len(ends) > 1 {
		return nil, a.Errorf(ends[0], `"end", "rel_end", "shape", and "rel_shape" arguments are mutually exclusive`)
	}
	s.named = len(starts)+len(ends) > 0
	return s, nil
}

// CheckInputs checks, at build time, that the window comes either from the anchor and
// shape inputs (in[1], in[2]) or from named arguments, and the inputs' metadata.
func (s *Slice) CheckInputs(in []engine.TensorMeta) error {
	switch {
	case len(in) == 2:
		return s.args.Invalidf("give both the anchor and the shape inputs, or neither")
	case s.named && len(in) == 3:
		return s.args.Invalidf("the window is given twice: by the anchor and shape inputs and by named arguments (start, end, shape, rel_*); use one")
	case !s.named && len(in) == 1:
		return s.args.Invalidf("no window: give the anchor and shape inputs, or the start/rel_start and end/rel_end/shape/rel_shape arguments")
	}
	for k, name := range []string{"anchor", "shape"} {
		if k+1 >= len(in) {
			break
		}
		m := in[k+1]
		if m.DType.Size() == 0 || m.DType == engine.Bool || len(m.Shape) > 1 {
			return s.args.Invalidf("%s (input %d) must hold numbers, one per sliced axis, got %s %v", name, k+1, m.DType, m.Shape)
		}
	}
	return nil
}

// sliceAxes resolves the sliced axes of a sample: explicit axis_names, else axes
// (given or per sample), else the default axis_names when the layout has them, else
// the default axes. An empty list means every axis.
func (s *Slice) sliceAxes(ws *engine.Workspace, ndim int, layout string, w *SliceWindow) error {
	a := s.args
	names := a.String("axis_names")
	useNames := a.Has("axis_names") || (!a.Given("axes") && layout != "" && strings.ContainsRune(layout, 'W') && strings.ContainsRune(layout, 'H'))
	w.axes = w.axes[:0]
	if useNames {
		if names != "" && len(layout) != ndim {
			return a.ArgDataErrorf(ws, "axis_names", "the input has no layout to look up %q in; use axes", names)
		}
		for _, c := range names {
			d := strings.IndexRune(layout, c)
			if d < 0 {
				return a.ArgDataErrorf(ws, "axis_names", "axis %q is not in the input layout %q", string(c), layout)
			}
			w.axes = append(w.axes, d)
		}
	} else {
		ax, err := a.IntsAt(ws, "axes", w.axes)
		if err != nil {
			return err
		}
		w.axes = ax
		for i, d := range w.axes {
			if d < -ndim || d >= ndim {
				return a.ArgDataErrorf(ws, "axes", "Axis %d out of range. Expected range is [%d, %d] for a %dD input", d, -ndim, ndim-1, ndim)
			}
			if d < 0 {
				w.axes[i] = d + ndim
			}
		}
	}
	if len(w.axes) == 0 {
		for d := 0; d < ndim; d++ {
			w.axes = append(w.axes, d)
		}
	}
	return nil
}

// readInput reads the positional anchor or shape input of a sample.
func (s *Slice) readInput(ws *engine.Workspace, k int, naxes int, buf []float64) ([]float64, error) {
	t := ws.In[k]
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	sz := t.DType.Size()
	if sz == 0 || len(t.Data) < n*sz || n != naxes {
		return nil, s.args.DataErrorf(ws, "the %s input has shape %v; expected %d numbers, one per sliced axis", []string{"", "anchor", "shape"}[k], t.Shape, naxes)
	}
	buf = buf[:0]
	for i := 0; i < n; i++ {
		buf = append(buf, engine.ReadScalar(t.Data[i*sz:], t.DType))
	}
	return buf, nil
}

// Window computes a sample's window of an input of the given shape and layout, as
// DALI does: from the inputs, start = round(anchor) and end = round(anchor + shape)
// when both are relative (scaled by the extent), else start + round(shape); from the
// named arguments, start = round(start or rel_start * extent) and end = round(end, or
// rel_end * extent, or start + shape, or start + rel_shape * extent), the axes not
// listed taken whole. Out of the input, the policy decides: an error, a padded window,
// or one trimmed to the input.
func (s *Slice) Window(ws *engine.Workspace, shape []int, layout string, w *SliceWindow) error {
	ndim := len(shape)
	if err := s.sliceAxes(ws, ndim, layout, w); err != nil {
		return err
	}
	w.Start, w.Size = w.Start[:0], w.Size[:0]
	for _, e := range shape {
		w.Start = append(w.Start, 0)
		w.Size = append(w.Size, e)
	}
	a := s.args
	var err error
	names := [6]string{"start", "rel_start", "end", "rel_end", "shape", "rel_shape"}
	if s.named {
		for k, n := range names {
			w.named[k] = w.named[k][:0]
			if !a.Given(n) {
				continue
			}
			if w.named[k], err = a.FloatsAt(ws, n, w.named[k]); err != nil {
				return err
			}
			if len(w.named[k]) != len(w.axes) {
				return a.ArgDataErrorf(ws, n, "expected %d values (one per sliced axis %v), got %d", len(w.axes), w.axes, len(w.named[k]))
			}
		}
	} else {
		if w.anchor, err = s.readInput(ws, 1, len(w.axes), w.anchor); err != nil {
			return err
		}
		if w.sh, err = s.readInput(ws, 2, len(w.axes), w.sh); err != nil {
			return err
		}
	}
	// Integer anchors and shapes are absolute whatever normalized_* say (DALI).
	normAnchor := s.normAnchor && !s.named && ws.In[1].DType.IsFloat()
	normShape := s.normShape && !s.named && ws.In[2].DType.IsFloat()
	for i, d := range w.axes {
		ext := float64(shape[d])
		var lo, hi float64
		if s.named {
			lo, hi = 0, ext
			switch {
			case len(w.named[0]) > 0:
				lo = w.named[0][i]
			case len(w.named[1]) > 0:
				lo = w.named[1][i] * ext
			}
			switch {
			case len(w.named[2]) > 0:
				hi = w.named[2][i]
			case len(w.named[3]) > 0:
				hi = w.named[3][i] * ext
			case len(w.named[4]) > 0:
				hi = lo + w.named[4][i]
			case len(w.named[5]) > 0:
				hi = lo + w.named[5][i]*ext
			}
			lo, hi = math.Round(lo), math.Round(hi)
		} else {
			an, sh := w.anchor[i], w.sh[i]
			if normAnchor {
				an *= ext
			}
			if normShape {
				sh *= ext
			}
			lo = math.Round(an)
			if normAnchor && normShape {
				hi = math.Round(an + sh)
			} else {
				hi = lo + math.Round(sh)
			}
		}
		if math.IsNaN(lo) || math.IsNaN(hi) || math.Abs(lo) > 1<<40 || math.Abs(hi) > 1<<40 {
			return a.DataErrorf(ws, "the slice of axis %d ([%g, %g)) is not a window of the input %v", d, lo, hi, shape)
		}
		if hi < lo {
			return a.DataErrorf(ws, "the slice of axis %d has a negative extent ([%g, %g)) for the input %v", d, lo, hi, shape)
		}
		w.Start[d], w.Size[d] = int(lo), int(hi-lo)
	}
	w.OutOfBounds = false
	for d := range shape {
		if w.Start[d] < 0 || w.Start[d]+w.Size[d] > shape[d] {
			w.OutOfBounds = true
		}
	}
	if !w.OutOfBounds {
		return nil
	}
	switch s.policy {
	case "error":
		if s.Image && len(shape) == 3 {
			return a.DataErrorf(ws, "cropping window [%d..%d, %d..%d] is not valid for image dimensions [%d x %d] (out_of_bounds_policy \"error\"; use \"pad\" or \"trim_to_shape\")",
				w.Start[0], w.Start[0]+w.Size[0], w.Start[1], w.Start[1]+w.Size[1], shape[0], shape[1])
		}
		return a.DataErrorf(ws, "Slice can't be placed out of bounds with current policy. Got: anchor %v, shape %v, input shape %v (out_of_bounds_policy \"error\"; use \"pad\" or \"trim_to_shape\")", w.Start, w.Size, shape)
	case "trim_to_shape":
		for d := range shape {
			lo, hi := max(w.Start[d], 0), min(w.Start[d]+w.Size[d], shape[d])
			w.Start[d], w.Size[d] = lo, max(hi-lo, 0)
		}
		w.OutOfBounds = false
	}
	return nil
}

// String describes a window for messages.
func (w *SliceWindow) String() string { return fmt.Sprintf("start %v size %v", w.Start, w.Size) }
