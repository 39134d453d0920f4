package math

import (
	"fmt"
	gomath "math"

	"github.com/godali/godali/engine"
)

// reduction describes one of DALI's fn.reductions operators.
type reduction struct {
	name, doc string
	dtype     bool // takes a dtype argument
	withMean  bool // std_dev, variance: a second input holds the mean
}

var reductionList = []reduction{
	{"min", "Gets the smallest element along axes (DALI's fn.reductions.min); the type is the input's.", false, false},
	{"max", "Gets the largest element along axes (DALI's fn.reductions.max); the type is the input's.", false, false},
	{"sum", "Gets the sum of elements along axes (DALI's fn.reductions.sum). Default type: INT64 for signed, UINT64 for unsigned integers (wrapping), the input's for floats.", true, false},
	{"mean", "Gets the mean of elements along axes (DALI's fn.reductions.mean). Default type FLOAT (FLOAT64 for FLOAT64 input).", true, false},
	{"mean_square", "Gets the mean of the squared elements along axes (DALI's fn.reductions.mean_square). Default type FLOAT (FLOAT64 for FLOAT64 input).", true, false},
	{"rms", "Gets the root mean square of elements along axes (DALI's fn.reductions.rms). Default type FLOAT (FLOAT64 for FLOAT64 input).", true, false},
	{"std_dev", "Gets the standard deviation of elements along axes around mean, the second input (DALI's fn.reductions.std_dev): sqrt(sum((x - mean)^2) / (N - ddof)). FLOAT.", false, true},
	{"variance", "Gets the variance of elements along axes around mean, the second input (DALI's fn.reductions.variance): sum((x - mean)^2) / (N - ddof). FLOAT.", false, true},
}

func init() {
	for _, r := range reductionList {
		args := []engine.ArgSpec{
			{Name: "axes", Type: engine.ArgIntList, Doc: "the axes to reduce, in [-ndim, ndim-1] (default: all; [] reduces none)"},
			{Name: "axis_names", Type: engine.ArgString, Doc: "the axes to reduce, by layout name (instead of axes)"},
			{Name: "keep_dims", Type: engine.ArgBool, Default: false, Doc: "keep reduced axes as extent 1"},
		}
		if r.dtype {
			args = append(args, engine.ArgSpec{Name: "dtype", Type: engine.ArgDType, Doc: "the output type (default: see above)"})
		}
		s := &engine.Schema{Name: "reductions." + r.name, Doc: r.doc, MinInputs: 1, MaxInputs: 1,
			Outputs: []string{"output"}, HostOnly: true, Args: args}
		if r.withMean {
			s.MinInputs, s.MaxInputs = 2, 2
			s.Args = append(s.Args, engine.ArgSpec{Name: "ddof", Type: engine.ArgInt, Default: 0, Doc: "delta degrees of freedom: the divisor is N - ddof"})
		}
		engine.RegisterSchema(s)
		kind := r.name
		engine.RegisterBackend(s.Name, "cpu", func(a *engine.Args) (engine.Operator, error) {
			if a.GivenConstant("axes") && a.Given("axis_names") {
				return nil, a.Errorf("axis_names", "give axes or axis_names, not both")
			}
			return &reduceOp{args: a, kind: kind}, nil
		})
	}
}

type reduceOp struct {
	args *engine.Args
	kind string
}

func (o *reduceOp) where() string { return o.args.Where() }

func (o *reduceOp) outType(in engine.DType) engine.DType {
	if o.args.Given("dtype") {
		return o.args.DType("dtype")
	}
	switch o.kind {
	case "min", "max":
		return in
	case "sum":
		switch {
		case in.IsSigned():
			return engine.Int64
		case in.IsUnsigned() && in != engine.Bool:
			return engine.UInt64
		case in == engine.Bool:
			return engine.Int64
		}
		return in
	}
	if in == engine.Float64 {
		return engine.Float64
	}
	return engine.Float32
}

// reduced marks the reduced dimensions of an ndim-D input with this layout (nil mask:
// every dimension, axes not given).
func (o *reduceOp) reduced(ndim int, layout string) ([]bool, error) {
	a := o.args
	mask := make([]bool, ndim)
	switch {
	case a.Given("axis_names"):
		for _, c := range []byte(a.String("axis_names")) {
			k := -1
			for i := 0; i < len(layout); i++ {
				if layout[i] == c {
					k = i
				}
			}
			if k < 0 || len(layout) != ndim {
				return nil, fmt.Errorf("%s: argument \"axis_names\": %q is not in the input layout %q", o.where(), string(c), layout)
			}
			mask[k] = true
		}
	case a.GivenConstant("axes"):
		for _, ax := range a.Ints("axes") {
			k := int(ax)
			if k < 0 {
				k += ndim
			}
			if k < 0 || k >= ndim {
				return nil, fmt.Errorf("%s: argument \"axes\": Axis index out of range: %d for a %d-D input (valid: %d to %d)", o.where(), ax, ndim, -ndim, ndim-1)
			}
			mask[k] = true
		}
	default:
		for i := range mask {
			mask[i] = true
		}
	}
	return mask, nil
}

func (o *reduceOp) outShape(in []int, layout string, mask []bool) ([]int, string) {
	keep := o.args.Bool("keep_dims")
	out := make([]int, 0, len(in))
	var l []byte
	for i, d := range in {
		switch {
		case !mask[i]:
			out = append(out, d)
		case keep:
			out = append(out, 1)
		default:
			continue
		}
		if len(layout) == len(in) {
			l = append(l, layout[i])
		}
	}
	return out, string(l)
}

func (o *reduceOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	d := in[0].DType
	if d != engine.DTypeInvalid && !d.IsFloat() && !d.IsSigned() && !d.IsUnsigned() {
		return nil, o.args.Invalidf("the input must be numbers, got %s", d)
	}
	m := engine.TensorMeta{DType: o.outType(d)}
	if in[0].Shape == nil {
		return []engine.TensorMeta{m}, nil
	}
	mask, err := o.reduced(len(in[0].Shape), in[0].Layout)
	if err != nil {
		return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
	}
	m.Shape, m.Layout = o.outShape(in[0].Shape, in[0].Layout, mask)
	return []engine.TensorMeta{m}, nil
}

type reduceState struct {
	mask  []bool
	idx   []int
	ostr  []int
	accF  []float64
	accU  []uint64
	first []bool
}

func (o *reduceOp) NewWorkerState() any { return &reduceState{} }

func (o *reduceOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	mask, err := o.reduced(len(in.Shape), in.Layout)
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	s, l := o.outShape(in.Shape, in.Layout, mask)
	out.DType, out.Layout = o.outType(in.DType), l
	out.SetShape(s...)
	ws.State.(*reduceState).mask = mask
	vol, n := 1, 1
	for i, d := range in.Shape {
		if mask[i] {
			n *= d
		} else {
			vol *= d
		}
	}
	if n == 0 && vol > 0 && (o.kind == "min" || o.kind == "max") {
		return o.args.DataErrorf(ws, "cannot reduce an empty extent (input shape %v)", in.Shape)
	}
	if len(ws.In) > 1 {
		mv := 1
		for _, d := range ws.In[1].Shape {
			mv *= d
		}
		if mv != vol && mv != 1 {
			return o.args.DataErrorf(ws, "the mean input has shape %v (%d values); the reduction has %d outputs %v", ws.In[1].Shape, mv, vol, s)
		}
	}
	return nil
}

// intMode reports whether the reduction is computed on integer bits (exact, wrapping):
// min, max and sum of integers into an integer type.
func (o *reduceOp) intMode(in, out engine.DType) bool {
	integer := func(d engine.DType) bool { return d.IsSigned() || d.IsUnsigned() }
	return (o.kind == "min" || o.kind == "max" || o.kind == "sum") && integer(in) && integer(out)
}

func readBits(b []byte, d engine.DType) uint64 {
	var u uint64
	for k := 0; k < d.Size(); k++ {
		u |= uint64(b[k]) << (8 * k)
	}
	if d.IsSigned() {
		shift := 64 - 8*d.Size()
		u = uint64(int64(u<<shift) >> shift)
	}
	return u
}

func (o *reduceOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	st := ws.State.(*reduceState)
	nd := len(in.Shape)
	mask := st.mask
	vol, n, total := 1, 1, 1
	for i, d := range in.Shape {
		total *= d
		if mask[i] {
			n *= d
		} else {
			vol *= d
		}
	}
	if vol == 0 {
		return nil
	}
	if cap(st.idx) < nd {
		st.idx, st.ostr = make([]int, nd), make([]int, nd)
	}
	idx, ostr := st.idx[:nd], st.ostr[:nd]
	s := 1
	for i := nd - 1; i >= 0; i-- {
		idx[i] = 0
		ostr[i] = 0
		if !mask[i] {
			ostr[i] = s
			s *= in.Shape[i]
		}
	}
	if cap(st.accF) < vol {
		st.accF, st.accU, st.first = make([]float64, vol), make([]uint64, vol), make([]bool, vol)
	}
	accF, accU, first := st.accF[:vol], st.accU[:vol], st.first[:vol]
	for i := range accF {
		accF[i], accU[i], first[i] = 0, 0, true
	}
	ints := o.intMode(in.DType, out.DType)
	signed := in.DType.IsSigned()
	var mean *engine.Tensor
	if len(ws.In) > 1 {
		mean = ws.In[1]
	}
	sz := in.DType.Size()
	oi := 0
	for e := 0; e < total; e++ {
		b := in.Data[e*sz:]
		if ints {
			u := readBits(b, in.DType)
			switch o.kind {
			case "sum":
				accU[oi] += u
			case "min":
				if first[oi] || (signed && int64(u) < int64(accU[oi])) || (!signed && u < accU[oi]) {
					accU[oi] = u
				}
			case "max":
				if first[oi] || (signed && int64(u) > int64(accU[oi])) || (!signed && u > accU[oi]) {
					accU[oi] = u
				}
			}
		} else {
			v := engine.ReadScalar(b, in.DType)
			switch o.kind {
			case "sum", "mean":
				accF[oi] += v
			case "mean_square", "rms":
				accF[oi] += v * v
			case "min":
				if first[oi] || v < accF[oi] {
					accF[oi] = v
				}
			case "max":
				if first[oi] || v > accF[oi] {
					accF[oi] = v
				}
			case "std_dev", "variance":
				m := meanAt(mean, oi)
				accF[oi] += (v - m) * (v - m)
			}
		}
		first[oi] = false
		for d := nd - 1; d >= 0; d-- {
			idx[d]++
			oi += ostr[d]
			if idx[d] < in.Shape[d] {
				break
			}
			oi -= idx[d] * ostr[d]
			idx[d] = 0
		}
	}
	osz := out.DType.Size()
	div := float64(n)
	if mean != nil {
		div = float64(n - o.args.Int("ddof"))
	}
	for i := 0; i < vol; i++ {
		dst := out.Data[i*osz:]
		if ints {
			for k := 0; k < osz; k++ {
				dst[k] = byte(accU[i] >> (8 * k))
			}
			continue
		}
		v := accF[i]
		switch o.kind {
		case "mean", "mean_square", "variance":
			v /= div
		case "rms", "std_dev":
			v = gomath.Sqrt(v / div)
		}
		engine.WriteScalar(dst, out.DType, v)
	}
	return nil
}

func meanAt(t *engine.Tensor, i int) float64 {
	if t.NumBytes() == t.DType.Size() {
		i = 0
	}
	return engine.ReadScalar(t.Data[i*t.DType.Size():], t.DType)
}
