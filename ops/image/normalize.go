package image

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "normalize",
		Doc: "Normalizes each sample as DALI does: out = scale * (in - mean) / stddev + shift, with mean " +
			"and stddev given (a number, or per sample a tensor broadcast over the reduced axes) or " +
			"computed over axes (default all) of the sample; a computed stddev is " +
			"sqrt(sum((in - mean)^2) / (n - ddof) + epsilon), and a zero one gives out = shift. " +
			"Statistics in float64, output rounded (integer types saturated) to dtype.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"},
		Args: []engine.ArgSpec{
			{Name: "mean", Type: engine.ArgFloat, TensorInput: true, Doc: "mean to subtract; computed over axes when absent"},
			{Name: "stddev", Type: engine.ArgFloat, TensorInput: true, Doc: "standard deviation to divide by (> 0); computed over axes when absent (around mean)"},
			{Name: "axes", Type: engine.ArgIntList, Doc: "dimensions to reduce (negative count from the end); default all, or those where a per-sample mean/stddev has extent 1"},
			{Name: "axis_names", Type: engine.ArgString, Doc: "dimensions to reduce, as layout letters (e.g. \"HW\"); exclusive with axes"},
			{Name: "scale", Type: engine.ArgFloat, Default: 1.0, Doc: "multiplier of the normalized value"},
			{Name: "shift", Type: engine.ArgFloat, Default: 0.0, Doc: "added after scaling"},
			{Name: "epsilon", Type: engine.ArgFloat, Default: 0.0, Doc: "added to a computed variance"},
			{Name: "ddof", Type: engine.ArgInt, Default: 0, Doc: "delta degrees of freedom: the variance divides by n - ddof"},
			{Name: "batch", Type: engine.ArgBool, Default: false, Doc: "statistics over the whole batch; only False (per sample) is supported"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "output type (FLOAT, FLOAT16, FLOAT64, UINT8, INT8, INT32, INT64)"},
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
}

func newNormalize(a *engine.Args) (engine.Operator, error) {
	if a.Bool("batch") {
		return nil, a.Errorf("batch", "batch=True (statistics across the batch) is not supported; normalize per sample (batch=False) or pass mean and stddev")
	}
	o := &normalizeOp{args: a, out: a.DType("dtype"), scale: a.Float("scale"), shift: a.Float("shift"),
		eps: a.Float("epsilon"), ddof: a.Int("ddof"), mean: a.Float("mean"), std: a.Float("stddev")}
	switch o.out {
	case engine.Float32, engine.Float16, engine.Float64, engine.UInt8, engine.Int8, engine.Int32, engine.Int64:
	default:
		return nil, a.Errorf("dtype", "expected FLOAT, FLOAT16, FLOAT64, UINT8, INT8, INT32 or INT64, got %s", o.out)
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
	o.meanPer, o.stdPer = a.AnyPerSample("mean"), a.AnyPerSample("stddev")
	o.meanGiven = a.Has("mean") || o.meanPer
	o.stdGiven = a.Has("stddev") || o.stdPer
	if a.Has("stddev") && o.std <= 0 {
		return nil, a.Errorf("stddev", "must be > 0, got %g", o.std)
	}
	return o, nil
}

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
	reduced := make([]bool, n)
	switch {
	case o.axesGiven:
		for _, d := range o.axes {
			reduced[d] = true
		}
	default:
		// Without axes, a per-sample mean or stddev of the input's rank names the reduced
		// axes by its extents of 1; otherwise every axis is reduced.
		var ref []int
		if s, ok := o.args.ArgShapeAt(ws, "mean"); ok && len(s) == n {
			ref = s
		} else if s, ok := o.args.ArgShapeAt(ws, "stddev"); ok && len(s) == n {
			ref = s
		}
		for d := range reduced {
			reduced[d] = ref == nil || (ref[d] == 1 && in.Shape[d] != 1)
		}
	}
	st.stat = append(st.stat[:0], in.Shape...)
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
	// A per-sample mean or stddev is one value or one per statistic (FloatsBroadcastAt
	// reads it in Run); said here, before the output is allocated, with the input's shape.
	for _, name := range []string{"mean", "stddev"} {
		if s, ok := o.args.ArgShapeAt(ws, name); ok && numElements(s) != 1 && !slices.Equal(s, st.stat) {
			return o.args.DataErrorf(ws, "argument %q: per-sample shape %v does not broadcast: expected a scalar or shape %v (the input %v with reduced axes 1)", name, s, st.stat, in.Shape)
		}
	}
	st.mean = growF64(st.mean, nstat)
	st.inv = growF64(st.inv, nstat)
	st.acc = growF64(st.acc, nstat)
	ws.Out[0].SetShape(in.Shape...)
	return nil
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

func (o *normalizeOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	st := ws.State.(*normalizeState)
	isz, osz := in.DType.Size(), out.DType.Size()
	load := func(i int) float64 { return engine.ReadScalar(in.Data[i*isz:], in.DType) }
	switch in.DType {
	case engine.UInt8:
		load = func(i int) float64 { return float64(in.Data[i]) }
	case engine.Float32:
		load = func(i int) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(in.Data[4*i:]))) }
	}
	total := numElements(in.Shape)
	nstat := len(st.mean)
	count := 0
	if nstat > 0 {
		count = total / nstat
	}

	var err error
	switch {
	case o.meanPer:
		if st.mean, err = o.args.FloatsBroadcastAt(ws, "mean", st.stat, st.mean); err != nil {
			return err
		}
	case o.meanGiven:
		for i := range st.mean {
			st.mean[i] = o.mean
		}
	default:
		if count == 0 {
			return o.args.DataErrorf(ws, "cannot compute the mean of an empty sample (shape %v)", in.Shape)
		}
		for i := range st.acc {
			st.acc[i] = 0
		}
		st.forEach(in.Shape, func(i, s int) { st.acc[s] += load(i) })
		for i := range st.mean {
			st.mean[i] = st.acc[i] / float64(count)
		}
	}
	switch {
	case o.stdPer || o.stdGiven:
		if o.stdPer {
			if st.inv, err = o.args.FloatsBroadcastAt(ws, "stddev", st.stat, st.inv); err != nil {
				return err
			}
		} else {
			for i := range st.inv {
				st.inv[i] = o.std
			}
		}
		for i, sd := range st.inv {
			if !(sd > 0) || math.IsInf(sd, 0) {
				return o.args.DataErrorf(ws, "argument \"stddev\": must be a finite number > 0, got %g for this sample", sd)
			}
			st.inv[i] = 1 / sd
		}
	default:
		if count-o.ddof <= 0 {
			return o.args.DataErrorf(ws, "argument \"ddof\": %d leaves no degrees of freedom for %d values per statistic (shape %v)", o.ddof, count, in.Shape)
		}
		for i := range st.acc {
			st.acc[i] = 0
		}
		st.forEach(in.Shape, func(i, s int) {
			d := load(i) - st.mean[s]
			st.acc[s] += d * d
		})
		for i := range st.inv {
			v := st.acc[i]/float64(count-o.ddof) + o.eps
			if v > 0 {
				st.inv[i] = 1 / math.Sqrt(v)
			} else {
				st.inv[i] = 0 // a constant sample maps to shift, as in DALI
			}
		}
	}
	for i := range st.inv {
		st.inv[i] *= o.scale
	}
	if out.DType == engine.Float32 {
		st.forEach(in.Shape, func(i, s int) {
			y := (load(i)-st.mean[s])*st.inv[s] + o.shift
			binary.LittleEndian.PutUint32(out.Data[4*i:], math.Float32bits(float32(y)))
		})
		return nil
	}
	st.forEach(in.Shape, func(i, s int) {
		engine.WriteScalarSat(out.Data[i*osz:], out.DType, (load(i)-st.mean[s])*st.inv[s]+o.shift)
	})
	return nil
}
