package image

import (
	"math"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "pad",
		Doc: "Pads each sample at the end of the chosen axes with fill_value, as DALI does: an axis grows to " +
			"shape (never shrinks), or, where shape is -1 or not given, to the largest extent of the batch; " +
			"then to a multiple of align. Any type and number of dimensions.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "axes", Type: engine.ArgIntList, TensorInput: true, Doc: "axes to pad (negative count from the end); default or empty: all; may come per sample"},
			{Name: "axis_names", Type: engine.ArgString, Doc: "axes to pad, as layout letters (e.g. \"HW\"); wins over axes"},
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "minimum output extent of each padded axis, in axes order; -1: the batch's largest (may come per sample)"},
			{Name: "align", Type: engine.ArgIntList, TensorInput: true, Doc: "round each padded extent up to a multiple of this (one value, or one per axis; may come per sample)"},
			{Name: "fill_value", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "value of the padding (may come per sample)"},
		},
	})
	engine.RegisterBackend("pad", "cpu", func(a *engine.Args) (engine.Operator, error) {
		for _, v := range a.Ints("align") {
			if v < 1 && !a.AnyPerSample("align") {
				return nil, a.Errorf("align", "Values of `align` argument must be positive. Got %v", a.Ints("align"))
			}
		}
		return &padOp{args: a}, nil
	})
}

// padOp sees the whole batch (engine.HostBatchOperator): by default an axis is padded
// to the batch's largest extent.
type padOp struct {
	args *engine.Args
	dt   engine.DType
	copy func(dst, src []byte, n int)
}

type padSample struct {
	axes, want, align []int
	fill              [8]byte
	out               []int
}

func (o *padOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.DType.Size() == 0 {
		return nil, o.args.Invalidf("input must be a tensor of a numeric type, got %s %v", m.DType, m.Shape)
	}
	o.dt = m.DType
	o.copy = convertRun(m.DType, m.DType)
	var shape []int // unknown rank (e.g. random.uniform with a per-sample shape): the samples'
	if m.Shape != nil {
		shape = make([]int, len(m.Shape))
		for i := range shape {
			shape[i] = -1
		}
	}
	return []engine.TensorMeta{{DType: m.DType, Layout: m.Layout, Shape: shape}}, nil
}

// Setup and Run are not called: RunHostBatch does the work.
func (o *padOp) Setup(*engine.Workspace) error {
	return engine.Errorf(engine.StatusInternal, "%s: pad runs per batch", o.args.Where())
}

func (o *padOp) Run(*engine.Workspace) error { return o.Setup(nil) }

// padAxes resolves a sample's padded axes: axis_names (looked up in the sample's
// layout) when given, else axes (empty: all).
func (o *padOp) padAxes(ws *engine.Workspace, ndim int, layout string, buf []int) ([]int, error) {
	a := o.args
	out := buf[:0]
	if names := a.String("axis_names"); a.Given("axis_names") && names != "" {
		if len(layout) != ndim {
			return nil, a.ArgDataErrorf(ws, "axis_names", "the input has no layout (%q) to look up %q in; use axes", layout, names)
		}
		for _, c := range names {
			d := strings.IndexRune(layout, c)
			if d < 0 {
				return nil, a.ArgDataErrorf(ws, "axis_names", "axis %q is not in the input layout %q", string(c), layout)
			}
			out = append(out, d)
		}
	} else {
		ax, err := a.IntsAt(ws, "axes", out)
		if err != nil {
			return nil, err
		}
		out = ax
		for i, d := range out {
			if d < -ndim || d >= ndim {
				return nil, a.ArgDataErrorf(ws, "axes", "Axis %d out of range. Expected range is [%d, %d] for a %dD input", d, -ndim, ndim-1, ndim)
			}
			if d < 0 {
				out[i] = d + ndim
			}
		}
	}
	if len(out) == 0 {
		for d := 0; d < ndim; d++ {
			out = append(out, d)
		}
	}
	for i, d := range out {
		for _, e := range out[:i] {
			if e == d {
				return nil, a.ArgDataErrorf(ws, "axes", "axis %d listed twice", d)
			}
		}
	}
	return out, nil
}

// RunHostBatch pads every sample of the batch.
func (o *padOp) RunHostBatch(hw *engine.HostBatchWorkspace) error {
	a := o.args
	n := hw.Size
	samples := make([]padSample, n)
	var ws engine.Workspace
	ndim := len(hw.In[0][0].Shape)
	zero := make([]int, ndim)
	batchMax := make([]int, ndim)
	for i := 0; i < n; i++ {
		in := hw.In[0][i]
		if len(in.Shape) != ndim {
			return a.DataErrorf(hw.Sample(i, &ws), "sample %d has %d dimensions, sample 0 %d; the samples of a batch have one rank", i, len(in.Shape), ndim)
		}
		for d, e := range in.Shape {
			batchMax[d] = max(batchMax[d], e)
		}
	}
	for i := 0; i < n; i++ {
		in := hw.In[0][i]
		w := hw.Sample(i, &ws)
		s := &samples[i]
		var err error
		if s.axes, err = o.padAxes(w, ndim, in.Layout, nil); err != nil {
			return err
		}
		if s.want, err = a.IntsAt(w, "shape", nil); err != nil {
			return err
		}
		if len(s.want) != 0 && len(s.want) != len(s.axes) {
			return a.ArgDataErrorf(w, "shape", "needs one extent per padded axis %v, got %v", s.axes, s.want)
		}
		if s.align, err = a.IntsAt(w, "align", nil); err != nil {
			return err
		}
		if len(s.align) != 0 && len(s.align) != 1 && len(s.align) != len(s.axes) {
			return a.ArgDataErrorf(w, "align", "needs one value or one per padded axis %v, got %v", s.axes, s.align)
		}
		for _, v := range s.align {
			if v < 1 {
				return a.ArgDataErrorf(w, "align", "Values of `align` argument must be positive. Got %v", s.align)
			}
		}
		f, err := a.FloatAt(w, "fill_value")
		if err != nil {
			return err
		}
		engine.WriteScalarSat(s.fill[:], o.dt, truncInt(o.dt, f))
		s.out = append([]int(nil), in.Shape...)
		for j, d := range s.axes {
			ext := batchMax[d]
			if len(s.want) > 0 && s.want[j] >= 0 {
				if s.want[j] > 1<<31 {
					return a.ArgDataErrorf(w, "shape", "extent %d is too large", s.want[j])
				}
				ext = max(in.Shape[d], s.want[j])
			}
			if len(s.align) > 0 {
				al := s.align[0]
				if len(s.align) > 1 {
					al = s.align[j]
				}
				ext = (ext + al - 1) / al * al
			}
			s.out[d] = ext
		}
		if lim := w.Limits; lim != nil && lim.MaxImagePixels > 0 && int64(numElements(s.out)) > 64*lim.MaxImagePixels {
			return a.DataErrorf(w, "padded shape %v is too large", s.out)
		}
	}
	sz := o.dt.Size()
	for i := 0; i < n; i++ {
		in := hw.In[0][i]
		s := &samples[i]
		dst, err := hw.OutputLayout(0, i, o.dt, s.out, in.Layout)
		if err != nil {
			return err
		}
		if err := imaging.SliceND(dst, sz, in.Data, sz, in.Shape, zero, s.out, s.fill[:sz], -1, o.copy); err != nil {
			return a.DataErrorf(hw.Sample(i, &ws), "%v", err)
		}
	}
	return nil
}

// truncInt is v as DALI's static_cast converts an argument to an integer output type:
// truncated toward zero (for integer d; out-of-range values, undefined in C++, are then
// saturated by the caller's WriteScalarSat).
func truncInt(d engine.DType, v float64) float64 {
	if d.IsFloat() {
		return v
	}
	return math.Trunc(v)
}
