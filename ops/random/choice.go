package random

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "random.choice",
		Doc: "Draws, per sample, elements of the input a with probabilities p (uniform by default), " +
			"as DALI's fn.random.choice: a 0-D integer a = n means the set [0, 1, ..., n-1]; an N-D a " +
			"is a list of elements along its first dimension (each of shape a.shape[1:]). The output " +
			"has shape shape (or the shape of the optional second input, shape_like) followed by the " +
			"element's shape, and a's type. In Python a is the first input: fn.random.choice(5), " +
			"fn.random.choice([0.5, 1.0, 2.0], p=[0.25, 0.5, 0.25]), fn.random.choice(node).",
		MinInputs: 0, MaxInputs: 2, Outputs: []string{"value"}, Random: true, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "a", Type: engine.ArgFloatList, Doc: "a as a constant, for pipeline descriptions: a list (INT32 when every value is whole, else FLOAT) or one int n; the operator then takes no input"},
			{Name: "p", Type: engine.ArgFloatList, TensorInput: true, Doc: "probability of each element of a (in [0, 1], summing to 1; one value is used for every element); default uniform; may come per sample"},
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "shape of the draws (default: one draw); per sample from a node of one int per dimension; exclusive with a second input"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type (a godali extension; default: a's type); values are converted, integers saturated"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
			randomStateArg,
		},
	})
	engine.RegisterBackend("random.choice", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o := &choiceOp{args: a}
		if a.Given("a") {
			k, err := constantA(a)
			if err != nil {
				return nil, err
			}
			o.konst = k
			if _, per := a.IsPerSample("p"); a.GivenConstant("p") && !per {
				n := k.Shape
				cnt := 0
				if len(n) == 0 {
					cnt = int(engine.ReadScalar(k.Data, k.DType))
				} else {
					cnt = n[0]
				}
				if _, _, msg := cumulative(a.Floats("p"), nil, cnt, 0); msg != "" {
					return nil, a.Errorf("p", "%s", msg)
				}
			}
		}
		return o, nil
	})
}

// constantA is the tensor of a constant argument a: a 0-D INT32 n, or a 1-D list.
func constantA(a *engine.Args) (*engine.Tensor, error) {
	vals := a.Floats("a")
	if a.IsScalar("a") {
		n := vals[0]
		if n != math.Trunc(n) || n < 1 || n > 1<<31-1 {
			return nil, a.Errorf("a", "a single value is the number of choices n (an int >= 1), got %g", n)
		}
		t := &engine.Tensor{DType: engine.Int32, Shape: []int{}, Data: make([]byte, 4)}
		engine.WriteScalar(t.Data, engine.Int32, n)
		return t, nil
	}
	if len(vals) == 0 {
		return nil, a.Errorf("a", "must not be empty")
	}
	dt := engine.Int32
	for _, v := range vals {
		if v != math.Trunc(v) || math.Abs(v) > 1<<31 {
			dt = engine.Float32
		}
	}
	t := &engine.Tensor{DType: dt, Shape: []int{len(vals)}, Data: make([]byte, 4*len(vals))}
	for i, v := range vals {
		engine.WriteScalar(t.Data[4*i:], dt, v)
	}
	return t, nil
}

var choiceScalarTypes = "uint8, uint16, uint32, uint64, int8, int16, int32, int64"

type choiceOp struct {
	args     *engine.Args
	konst    *engine.Tensor // a given as an argument; nil: a is input 0
	out      engine.DType
	perShape bool
	static   []int // a constant shape argument
}

type choiceState struct {
	p, cdf []float64
	dims   []float64
}

func (o *choiceOp) NewWorkerState() any { return &choiceState{} }

func isIntType(d engine.DType) bool {
	switch d {
	case engine.UInt8, engine.UInt16, engine.UInt32, engine.UInt64, engine.Int8, engine.Int16, engine.Int32, engine.Int64:
		return true
	}
	return false
}

// a is the sample's a: the constant argument, or input 0.
func (o *choiceOp) a(ws *engine.Workspace) *engine.Tensor {
	if o.konst != nil {
		return o.konst
	}
	return ws.In[0]
}

// shapeLike is the optional shape_like input, or nil.
func (o *choiceOp) shapeLike(ws *engine.Workspace) *engine.Tensor {
	if o.konst == nil && len(ws.In) > 1 {
		return ws.In[1]
	}
	return nil
}

func (o *choiceOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if o.konst != nil {
		if len(in) > 0 {
			return nil, o.args.Errorf("a", "given both as an argument and with %d input(s); give a as input 0 (then shape_like as input 1), or the argument a and no input", len(in))
		}
		in = append([]engine.TensorMeta{{DType: o.konst.DType, Shape: o.konst.Shape}}, in...)
	} else if len(in) == 0 {
		return nil, o.args.Errorf("a", "missing: give a as the first input (in a pipeline description, the argument a may hold a constant)")
	}
	a := in[0]
	if a.Shape != nil && len(a.Shape) == 0 && !isIntType(a.DType) {
		return nil, o.args.Invalidf("input a: Data type %s is not supported for 0D inputs. Supported types are: %s",
			strings.ToLower(a.DType.String()), choiceScalarTypes)
	}
	o.out = a.DType
	if o.args.Given("dtype") {
		o.out = o.args.DType("dtype")
	}
	_, o.perShape = o.args.IsPerSample("shape")
	if len(in) > 1 && o.args.Given("shape") {
		return nil, o.args.Errorf("shape", "give shape or a second input (shape_like), not both")
	}
	var prefix []int
	known := true
	switch {
	case len(in) > 1:
		prefix, known = in[1].Shape, in[1].Shape != nil
	case o.perShape:
		known = false
	default:
		o.static = []int{}
		for _, d := range o.args.Ints("shape") {
			if d < 0 {
				return nil, o.args.Errorf("shape", "dimensions must be >= 0, got %v", o.args.Ints("shape"))
			}
			o.static = append(o.static, int(d))
		}
		prefix = o.static
	}
	m := engine.TensorMeta{DType: o.out}
	if known && a.Shape != nil {
		m.Shape = append([]int{}, prefix...)
		if len(a.Shape) > 0 {
			m.Shape = append(m.Shape, a.Shape[1:]...)
		}
		// DALI's layout: one draw keeps the element's layout (a's minus its first
		// axis), a 1-D shape keeps a's; otherwise none.
		if len(a.Layout) == len(a.Shape) && len(a.Layout) > 0 {
			switch len(prefix) {
			case 0:
				m.Layout = a.Layout[1:]
			case 1:
				m.Layout = a.Layout
			}
		}
	}
	return []engine.TensorMeta{m}, nil
}

// elements is the number of elements a offers: n for a 0-D a, else its first extent.
func (o *choiceOp) elements(ws *engine.Workspace) (int, error) {
	a := o.a(ws)
	if len(a.Shape) > 0 {
		if a.Shape[0] < 1 {
			return 0, o.args.DataErrorf(ws, "Expected positive number of elements for sampling, got: %d for sample: %d.", a.Shape[0], ws.Sample)
		}
		return a.Shape[0], nil
	}
	if !isIntType(a.DType) {
		return 0, o.args.DataErrorf(ws, "Data type %s is not supported for 0D inputs. Supported types are: %s", strings.ToLower(a.DType.String()), choiceScalarTypes)
	}
	v := engine.ReadScalar(a.Data, a.DType)
	if v < 1 || v > 1<<53 {
		return 0, o.args.DataErrorf(ws, "Expected positive number of elements for sampling, got: %d for sample: %d.", int64(v), ws.Sample)
	}
	return int(v), nil
}

func (o *choiceOp) Setup(ws *engine.Workspace) error {
	a := o.a(ws)
	if _, err := o.elements(ws); err != nil {
		return err
	}
	out := ws.Out[0].Shape[:0]
	switch sl := o.shapeLike(ws); {
	case sl != nil:
		out = append(out, sl.Shape...)
	case o.perShape:
		st := ws.State.(*choiceState)
		var err error
		if st.dims, err = o.args.FloatsAt(ws, "shape", st.dims); err != nil {
			return err
		}
		for _, d := range st.dims {
			if d != math.Trunc(d) || d < 0 || d > maxRandomElements {
				return o.args.ArgDataErrorf(ws, "shape", "dimensions must be whole numbers >= 0, got %v", st.dims)
			}
			out = append(out, int(d))
		}
	default:
		out = append(out, o.static...)
	}
	n := 1
	for _, d := range out {
		n *= d
		if n > maxRandomElements {
			return o.args.DataErrorf(ws, "output shape %v is more than %d draws per sample", out, maxRandomElements)
		}
	}
	if len(a.Shape) > 0 {
		out = append(out, a.Shape[1:]...)
	}
	ws.Out[0].Shape = out
	return nil
}

// probabilities reads p for n elements into st.cdf (nil when p is not given).
func (o *choiceOp) probabilities(ws *engine.Workspace, st *choiceState, n int) ([]float64, error) {
	if !o.args.Given("p") {
		return nil, nil
	}
	var err error
	if st.p, err = o.args.FloatsAt(ws, "p", st.p); err != nil {
		return nil, err
	}
	var msg string
	st.p, st.cdf, msg = cumulative(st.p, st.cdf, n, ws.Sample)
	if msg != "" {
		return nil, o.args.ArgDataErrorf(ws, "p", "%s", msg)
	}
	return st.cdf, nil
}

// cumulative checks the probabilities p of n elements (one value stands for every
// element) and returns them, broadcast, with their running sums appended to cdf[:0];
// msg says what is wrong, in DALI's words.
func cumulative(p, cdf []float64, n, sample int) ([]float64, []float64, string) {
	if len(p) == 1 && n != 1 {
		for len(p) < n {
			p = append(p, p[0])
		}
	}
	if len(p) != n {
		return p, cdf, fmt.Sprintf("Unexpected shape for argument \"p\". Expected {%d}, but got {%d}", n, len(p))
	}
	cdf = cdf[:0]
	sum := 0.0
	for i, q := range p {
		if !(q >= 0 && q <= 1) {
			return p, cdf, fmt.Sprintf("Probabilities must be in range [0, 1], but got: %g for sample: %d at index %d.", q, sample, i)
		}
		sum += q
		cdf = append(cdf, sum)
	}
	if math.Abs(sum-1) > 1e-4 {
		return p, cdf, fmt.Sprintf("Sum of probabilities must be 1.0, but got %g for sample: %d.", sum, sample)
	}
	return p, cdf, ""
}

func (o *choiceOp) Run(ws *engine.Workspace) error {
	a, t := o.a(ws), ws.Out[0]
	st := ws.State.(*choiceState)
	n, err := o.elements(ws)
	if err != nil {
		return err
	}
	cdf, err := o.probabilities(ws, st, n)
	if err != nil {
		return err
	}
	pick := func() int { return ws.RNG.Intn(n) }
	if n > 1<<31 { // Intn's 32 random bits would leave most of a large n out
		pick = func() int { return min(int(ws.RNG.Float64()*float64(n)), n-1) }
	}
	if cdf != nil {
		sum := cdf[len(cdf)-1]
		pick = func() int {
			u := ws.RNG.Float64() * sum
			i := sort.SearchFloat64s(cdf, u)
			// an element of probability 0 has the cdf of the one before it: never chosen
			for i < len(cdf)-1 && (cdf[i] <= u || st.p[i] == 0) {
				i++
			}
			return i
		}
	}
	isz, osz := a.DType.Size(), t.DType.Size()
	elem := 1 // values per element of a
	for _, d := range a.Shape[min(1, len(a.Shape)):] {
		elem *= d
	}
	draws := 0
	if elem > 0 {
		draws = len(t.Data) / (osz * elem)
	}
	for k := 0; k < draws; k++ {
		i := pick()
		dst := t.Data[k*elem*osz:]
		if len(a.Shape) == 0 { // the index itself
			engine.WriteScalarSat(dst, t.DType, float64(i))
			continue
		}
		src := a.Data[i*elem*isz:]
		if t.DType == a.DType {
			copy(dst[:elem*osz], src[:elem*isz])
			continue
		}
		for e := 0; e < elem; e++ {
			engine.WriteScalarSat(dst[e*osz:], t.DType, engine.ReadScalar(src[e*isz:], a.DType))
		}
	}
	return nil
}
