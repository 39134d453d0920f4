package image

import (
	"encoding/binary"
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "normalize",
		Doc: "Normalizes each sample as DALI does: out = scale * (in - mean) / stddev + shift, with mean " +
			"and stddev given (a number, or per sample a tensor broadcast over the reduced axes) or " +
			"computed over axes (default all) of the sample; a computed stddev is " +
			"sqrt(sum((in - mean)^2) / (n - ddof) + epsilon) (variance 0 when n <= ddof), a given one " +
			"sqrt(stddev^2 + epsilon), and a zero stddev gives out = shift. With batch=True the " +
			"statistics are computed over the whole batch (the samples' non-reduced extents must " +
			"match). Statistics in float64, output rounded (integer types saturated) to dtype.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"},
		Args: []engine.ArgSpec{
			{Name: "mean", Type: engine.ArgFloat, TensorInput: true, Doc: "mean to subtract; computed over axes when absent"},
			{Name: "stddev", Type: engine.ArgFloat, TensorInput: true, Doc: "standard deviation to divide by (> 0); computed over axes when absent (around mean)"},
			{Name: "axes", Type: engine.ArgIntList, Doc: "dimensions to reduce (negative count from the end); default all, or those where a per-sample mean/stddev has extent 1"},
			{Name: "axis_names", Type: engine.ArgString, Doc: "dimensions to reduce, as layout letters (e.g. \"HW\"); exclusive with axes"},
			{Name: "scale", Type: engine.ArgFloat, Default: 1.0, Doc: "multiplier of the normalized value"},
			{Name: "shift", Type: engine.ArgFloat, Default: 0.0, Doc: "added after scaling"},
			{Name: "epsilon", Type: engine.ArgFloat, Default: 0.0, Doc: "added to the variance (computed, or the square of a given stddev)"},
			{Name: "ddof", Type: engine.ArgInt, Default: 0, Doc: "delta degrees of freedom: the variance divides by n - ddof"},
			{Name: "batch", Type: engine.ArgBool, Default: false, Doc: "compute mean and stddev over the whole batch (the samples' extents on non-reduced axes must match); mean and stddev may then not come per sample"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "output type (FLOAT, FLOAT16, FLOAT64, UINT8, INT8, UINT16, INT16, UINT32, INT32, INT64)"},
		},
	})
	engine.RegisterBackend("normalize", "cpu", newNormalize)
}

type normalizeOp struct {
	args                *engine.Args
	out                 engine.DType
	scale, shift, eps   float64
	ddof                int
	mean, std           float64
	meanGiven, stdGiven bool
	meanPer, stdPer     bool
	meanInput, stdInput int
	axes                []int // reduced dimensions (nil: inferred per sample)
	axesGiven           bool
	ndim                int
}

type normalizeState struct {
	stat      []int // extents of the statistics: the input's, 1 on reduced axes
	stride    []int // each dimension's stride in the statistics (0 when reduced)
	mean, inv []float64
	acc       []float64
	coord     []int
	reduced   []bool
}

func newNormalize(a *engine.Args) (engine.Operator, error) {
	o := &normalizeOp{args: a, out: a.DType("dtype"), scale: a.Float("scale"), shift: a.Float("shift"),
		eps: a.Float("epsilon"), ddof: a.Int("ddof"), mean: a.Float("mean"), std: a.Float("stddev")}
	switch o.out {
	case engine.Float32, engine.Float16, engine.Float64, engine.UInt8, engine.Int8, engine.UInt16,
		engine.Int16, engine.UInt32, engine.Int32, engine.Int64:
	default:
		return nil, a.Errorf("dtype", "expected FLOAT, FLOAT16, FLOAT64, UINT8, INT8, UINT16, INT16, UINT32, INT32 or INT64, got %s", o.out)
	}
	for _, n := range []string{"scale", "shift", "epsilon", "mean", "stddev"} {
		if v := a.Float(n); math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, a.Errorf(n, "expected a finite number, got %g", v)
		}
	}
	if o.eps < 0 {
		return nil, a.Errorf("epsilon", "must be >= 0, got %g", o.eps)
	}
	if o.ddof < 0 {
		return nil, a.Errorf("ddof", "must be >= 0, got %d", o.ddof)
	}
	o.meanInput, o.meanPer = a.IsPerSample("mean")
	o.stdInput, o.stdPer = a.IsPerSample("stddev")
	o.meanGiven = a.GivenConstant("mean") || o.meanPer
	o.stdGiven = a.GivenConstant("stddev") || o.stdPer
	if a.GivenConstant("stddev") && o.std <= 0 {
		return nil, a.Errorf("stddev", "must be > 0, got %g", o.std)
	}
	if a.Bool("batch") {
		if o.meanPer || o.stdPer {
			return nil, a.Errorf("batch", "batch=True computes one mean and stddev for the whole batch; they cannot also come per sample")
		}
		return &normalizeBatchOp{o}, nil
	}
	return o, nil
}

// normalizeBatchOp is normalize with batch=True: it sees the whole batch at once
// (engine.HostBatchOperator), to compute the statistics over every sample.
type normalizeBatchOp struct{ *normalizeOp }

func (o *normalizeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 || m.DType == engine.Bool {
		return nil, o.args.Invalidf("input must be a numeric tensor of known rank, got %s %v", m.DType, m.Shape)
	}
	o.ndim = len(m.Shape)
	all := make([]int, o.ndim)
	for i := range all {
		all[i] = i
	}
	axes, given, err := resolveAxes(o.args, o.ndim, m.Layout, all)
	if err != nil {
		return nil, err
	}
	o.axes, o.axesGiven = axes, given
	return []engine.TensorMeta{{DType: o.out, Layout: m.Layout, Shape: append([]int(nil), m.Shape...)}}, nil
}

func (o *normalizeOp) NewWorkerState() any { return &normalizeState{} }

func (o *normalizeOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	st := ws.State.(*normalizeState)
	n := len(in.Shape)
	if n != o.ndim {
		return o.args.DataErrorf(ws, "input has %d dimensions, expected %d", n, o.ndim)
	}
	reduced := st.reducedBuf(n)
	switch {
	case o.axesGiven:
		for _, d := range o.axes {
			reduced[d] = true
		}
	default:
		// Without axes, a per-sample mean or stddev of the input's rank names the reduced
		// axes by its extents of 1; otherwise every axis is reduced.
		var ref *engine.Tensor
		if o.meanPer && len(ws.ArgIn[o.meanInput].Shape) == n {
			ref = ws.ArgIn[o.meanInput]
		} else if o.stdPer && len(ws.ArgIn[o.stdInput].Shape) == n {
			ref = ws.ArgIn[o.stdInput]
		}
		for d := range reduced {
			reduced[d] = ref == nil || (ref.Shape[d] == 1 && in.Shape[d] != 1)
		}
	}
	st.plan(in.Shape, reduced)
	for _, p := range []struct {
		per  bool
		idx  int
		name string
	}{{o.meanPer, o.meanInput, "mean"}, {o.stdPer, o.stdInput, "stddev"}} {
		if !p.per {
			continue
		}
		t := ws.ArgIn[p.idx]
		if k := numElements(t.Shape); k != 1 && !equalShape(t.Shape, st.stat) {
			return o.args.DataErrorf(ws, "argument %q: per-sample shape %v does not broadcast: expected a scalar or shape %v (the input %v with reduced axes 1)", p.name, t.Shape, st.stat, in.Shape)
		}
	}
	ws.Out[0].SetShape(in.Shape...)
	return nil
}

func (st *normalizeState) reducedBuf(n int) []bool {
	if cap(st.reduced) < n {
		st.reduced = make([]bool, n)
	}
	st.reduced = st.reduced[:n]
	for i := range st.reduced {
		st.reduced[i] = false
	}
	return st.reduced
}

// plan sets the statistics' extents and strides for an input of shape with the reduced
// axes, sizes the statistics buffers and returns their length.
func (st *normalizeState) plan(shape []int, reduced []bool) int {
	n := len(shape)
	st.stat = append(st.stat[:0], shape...)
	st.stride = append(st.stride[:0], make([]int, n)...)
	st.coord = append(st.coord[:0], make([]int, n)...)
	nstat := 1
	for d := n - 1; d >= 0; d-- {
		if reduced[d] {
			st.stat[d] = 1
			continue
		}
		st.stride[d] = nstat
		nstat *= st.stat[d]
	}
	st.mean = growF64(st.mean, nstat)
	st.inv = growF64(st.inv, nstat)
	st.acc = growF64(st.acc, nstat)
	return nstat
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func growF64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// forEach calls fn with every element's flat index and its statistics index.
func (st *normalizeState) forEach(shape []int, fn func(i, s int)) {
	n := numElements(shape)
	if n == 0 {
		return
	}
	c := st.coord
	for d := range c {
		c[d] = 0
	}
	s := 0
	last := len(shape) - 1
	for i := 0; i < n; i++ {
		fn(i, s)
		// advance the odometer
		for d := last; d >= 0; d-- {
			c[d]++
			s += st.stride[d]
			if c[d] < shape[d] {
				break
			}
			s -= st.stride[d] * c[d]
			c[d] = 0
		}
	}
}

// fillArg fills dst from a per-sample argument (a scalar or one value per statistic).
func fillArg(dst []float64, t *engine.Tensor) {
	sz := t.DType.Size()
	if numElements(t.Shape) == 1 {
		v := engine.ReadScalar(t.Data, t.DType)
		for i := range dst {
			dst[i] = v
		}
		return
	}
	for i := range dst {
		dst[i] = engine.ReadScalar(t.Data[i*sz:], t.DType)
	}
}

// load returns a reader of element i of t as float64.
func load(t *engine.Tensor) func(i int) float64 {
	switch t.DType {
	case engine.UInt8:
		return func(i int) float64 { return float64(t.Data[i]) }
	case engine.Float32:
		return func(i int) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))) }
	}
	sz := t.DType.Size()
	return func(i int) float64 { return engine.ReadScalar(t.Data[i*sz:], t.DType) }
}

func zero(s []float64) {
	for i := range s {
		s[i] = 0
	}
}

// setMean fills st.mean: a per-sample argument, the constant, or sums/count with the
// sums already in st.acc.
func (o *normalizeOp) setMean(st *normalizeState, arg *engine.Tensor, count int) {
	switch {
	case o.meanPer:
		fillArg(st.mean, arg)
	case o.meanGiven:
		for i := range st.mean {
			st.mean[i] = o.mean
		}
	default:
		for i := range st.mean {
			st.mean[i] = 0
			if count > 0 {
				st.mean[i] = st.acc[i] / float64(count)
			}
		}
	}
}

// setGivenInv fills st.inv with scale / sqrt(stddev^2 + epsilon) of a given stddev (0
// for a zero one, so that the output is shift, as DALI's keep-zero reciprocal gives).
func (o *normalizeOp) setGivenInv(ws *engine.Workspace, st *normalizeState, arg *engine.Tensor) error {
	if o.stdPer {
		fillArg(st.inv, arg)
	} else {
		for i := range st.inv {
			st.inv[i] = o.std
		}
	}
	for i, sd := range st.inv {
		if math.IsNaN(sd) || math.IsInf(sd, 0) {
			return o.args.ArgDataErrorf(ws, "stddev", "must be a finite number, got %g", sd)
		}
		if o.eps > 0 {
			sd = math.Sqrt(sd*sd + o.eps)
		}
		st.inv[i] = 0
		if sd != 0 {
			st.inv[i] = o.scale / sd
		}
	}
	return nil
}

// setComputedInv turns the squared deviations in st.acc into scale / stddev, over dof
// degrees of freedom (a variance of 0 when dof <= 0).
func (o *normalizeOp) setComputedInv(st *normalizeState, dof int) {
	for i := range st.inv {
		v := o.eps
		if dof > 0 {
			v += st.acc[i] / float64(dof)
		}
		st.inv[i] = 0 // a constant sample maps to shift, as in DALI
		if v > 0 {
			st.inv[i] = o.scale / math.Sqrt(v)
		}
	}
}

func (o *normalizeOp) accumulate(st *normalizeState, in *engine.Tensor) {
	ld := load(in)
	st.forEach(in.Shape, func(i, s int) { st.acc[s] += ld(i) })
}

func (o *normalizeOp) accumulateSq(st *normalizeState, in *engine.Tensor) {
	ld := load(in)
	st.forEach(in.Shape, func(i, s int) {
		d := ld(i) - st.mean[s]
		st.acc[s] += d * d
	})
}

// write stores scale * (in - mean) / stddev + shift into out.
func (o *normalizeOp) write(st *normalizeState, in *engine.Tensor, out []byte) {
	ld := load(in)
	if o.out == engine.Float32 {
		st.forEach(in.Shape, func(i, s int) {
			y := (ld(i)-st.mean[s])*st.inv[s] + o.shift
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(y)))
		})
		return
	}
	osz := o.out.Size()
	st.forEach(in.Shape, func(i, s int) {
		engine.WriteScalarSat(out[i*osz:], o.out, (ld(i)-st.mean[s])*st.inv[s]+o.shift)
	})
}

func (o *normalizeOp) argIn(ws *engine.Workspace, per bool, idx int) *engine.Tensor {
	if !per {
		return nil
	}
	return ws.ArgIn[idx]
}

func (o *normalizeOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	st := ws.State.(*normalizeState)
	count := 0
	if len(st.mean) > 0 {
		count = numElements(in.Shape) / len(st.mean)
	}
	if !o.meanGiven {
		zero(st.acc)
		o.accumulate(st, in)
	}
	o.setMean(st, o.argIn(ws, o.meanPer, o.meanInput), count)
	if o.stdGiven {
		if err := o.setGivenInv(ws, st, o.argIn(ws, o.stdPer, o.stdInput)); err != nil {
			return err
		}
	} else {
		zero(st.acc)
		o.accumulateSq(st, in)
		o.setComputedInv(st, count-o.ddof)
	}
	o.write(st, in, ws.Out[0].Data)
	return nil
}

// RunHostBatch normalizes with statistics over the whole batch: every sample adds to
// the same sums, so the samples' extents on the non-reduced axes must match.
func (o *normalizeBatchOp) RunHostBatch(hw *engine.HostBatchWorkspace) error {
	ins := hw.In[0]
	if len(ins) == 0 {
		return nil
	}
	st := &normalizeState{}
	n := len(ins[0].Shape)
	reduced := st.reducedBuf(n)
	for d := range reduced {
		reduced[d] = !o.axesGiven
	}
	if o.axesGiven {
		for _, d := range o.axes {
			reduced[d] = true
		}
	}
	st.plan(ins[0].Shape, reduced)
	first := append([]int(nil), st.stat...)
	count := 0
	for i, in := range ins {
		if len(in.Shape) != n {
			return o.args.DataErrorf(nil, "sample %d has %d dimensions, sample 0 has %d", i, len(in.Shape), n)
		}
		for d := range in.Shape {
			if !reduced[d] && in.Shape[d] != first[d] {
				return o.args.DataErrorf(nil, "batch=True: sample %d has shape %v, sample 0 %v; the extents of the non-reduced axes must match across the batch", i, in.Shape, ins[0].Shape)
			}
		}
		count += numElements(in.Shape) / max(numElements(first), 1)
	}
	if !o.meanGiven {
		zero(st.acc)
		for _, in := range ins {
			st.plan(in.Shape, reduced)
			o.accumulate(st, in)
		}
	}
	o.setMean(st, nil, count)
	if o.stdGiven {
		if err := o.setGivenInv(nil, st, nil); err != nil {
			return err
		}
	} else {
		zero(st.acc)
		for _, in := range ins {
			st.plan(in.Shape, reduced)
			o.accumulateSq(st, in)
		}
		o.setComputedInv(st, count-o.ddof)
	}
	for i, in := range ins {
		out, err := hw.Output(0, i, o.out, in.Shape)
		if err != nil {
			return err
		}
		st.plan(in.Shape, reduced)
		o.write(st, in, out)
	}
	return nil
}
