package transforms

import (
	"math"

	"github.com/godali/godali/engine"
)

// reverseOrderArg is the argument every transform shares.
var reverseOrderArg = engine.ArgSpec{Name: "reverse_order", Type: engine.ArgBool, Default: false,
	Doc: "compose with the input transform the other way round: the input's transform is applied after this one (no input: ignored)"}

// centerArg is the center of a scale, rotation or shear.
var centerArg = engine.ArgSpec{Name: "center", Type: engine.ArgFloatList, TensorInput: true,
	Doc: "the point the transform keeps in place (default: the origin), one value per dimension"}

// seedArg is accepted for DALI compatibility.
var seedArg = engine.ArgSpec{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "accepted for DALI compatibility"}

// generator is what one transform operator computes for a sample.
type generator interface {
	// dims is the number of spatial dimensions the sample's arguments imply, 0 when they
	// leave it open (e.g. a single scale factor). ws may be nil for constant arguments.
	dims(ws *engine.Workspace, st *state) (int, error)
	// matrix writes the operator's own (n+1) x (n+1) row-major matrix into m, which
	// holds the identity.
	matrix(ws *engine.Workspace, st *state, n int, m []float64) error
}

// state is a worker's scratch: the sample's matrices between Setup and Run.
type state struct {
	n    int
	own  []float64 // (n+1)^2
	in   []float64 // (n+1)^2, the input transform
	out  []float64 // (n+1)^2
	vals [4][]float64
}

// transformOp is the operator shared by the single-transform generators: an optional
// input matrix, the generator's matrix, composition and the float32 output.
type transformOp struct {
	args    *engine.Args
	gen     generator
	reverse bool
	perArgs []string // the arguments that may come per sample
}

func newTransformOp(a *engine.Args, gen generator, argNames ...string) *transformOp {
	return &transformOp{args: a, gen: gen, reverse: a.Bool("reverse_order"), perArgs: argNames}
}

func (o *transformOp) NewWorkerState() any { return &state{} }

// inputDims checks an input transform's metadata: [n, n+1] (dimensions may be unknown).
func inputDims(a *engine.Args, i int, m engine.TensorMeta) (int, error) {
	if len(m.Shape) != 2 || m.DType.Size() == 0 || m.DType == engine.Bool ||
		(m.Shape[0] >= 0 && m.Shape[1] >= 0 && m.Shape[1] != m.Shape[0]+1) {
		return 0, a.Invalidf("input %d must be an affine transform: a numeric [ndim, ndim+1] matrix, got %s %v", i, m.DType, m.Shape)
	}
	if m.Shape[0] >= 0 {
		return m.Shape[0], nil
	}
	if m.Shape[1] >= 0 {
		return m.Shape[1] - 1, nil
	}
	return -1, nil
}

func outMeta(n int) []engine.TensorMeta {
	if n <= 0 {
		return []engine.TensorMeta{{DType: engine.Float32, Shape: []int{-1, -1}}}
	}
	return []engine.TensorMeta{{DType: engine.Float32, Shape: []int{n, n + 1}}}
}

func (o *transformOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	n := -1
	if len(in) > 0 {
		var err error
		if n, err = inputDims(o.args, 0, in[0]); err != nil {
			return nil, err
		}
	}
	if !o.args.AnyPerSample(o.perArgs...) {
		d, err := o.gen.dims(nil, &state{})
		if err != nil {
			return nil, err
		}
		if d > 0 && n > 0 && d != n {
			return nil, o.args.Invalidf("the arguments describe a %d-D transform but the input transform is %d-D (%v)", d, n, in[0].Shape)
		}
		if d > 0 {
			n = d
		}
		if n < 0 && len(in) == 0 {
			return nil, o.args.Invalidf("cannot tell the number of dimensions from the arguments; give ndim or one value per dimension")
		}
	}
	return outMeta(n), nil
}

// sampleDims checks a sample's input transform and returns its dimensions.
func sampleDims(a *engine.Args, ws *engine.Workspace, i int) (int, error) {
	t := ws.In[i]
	if len(t.Shape) != 2 || t.Shape[0] < 1 || t.Shape[1] != t.Shape[0]+1 {
		return 0, a.DataErrorf(ws, "input %d must be an affine transform [ndim, ndim+1], got shape %v", i, t.Shape)
	}
	return t.Shape[0], nil
}

// readMatrix loads input i ([n, n+1]) as an (n+1)^2 homogeneous matrix into m.
func readMatrix(t *engine.Tensor, n int, m []float64) {
	identity(m, n)
	sz := t.DType.Size()
	for r := 0; r < n; r++ {
		for c := 0; c <= n; c++ {
			m[r*(n+1)+c] = engine.ReadScalar(t.Data[(r*(n+1)+c)*sz:], t.DType)
		}
	}
}

func identity(m []float64, n int) {
	for i := range m[:(n+1)*(n+1)] {
		m[i] = 0
	}
	for i := 0; i <= n; i++ {
		m[i*(n+2)] = 1
	}
}

// mul sets dst = a * b for (n+1)^2 matrices; dst must not alias a or b.
func mul(dst, a, b []float64, n int) {
	k := n + 1
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			s := 0.0
			for j := 0; j < k; j++ {
				s += a[r*k+j] * b[j*k+c]
			}
			dst[r*k+c] = s
		}
	}
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func (o *transformOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*state)
	n, err := o.gen.dims(ws, st)
	if err != nil {
		return err
	}
	if len(ws.In) > 0 {
		d, err := sampleDims(o.args, ws, 0)
		if err != nil {
			return err
		}
		if n > 0 && n != d {
			return o.args.DataErrorf(ws, "the arguments describe a %d-D transform but the input transform is %d-D (%v)", n, d, ws.In[0].Shape)
		}
		n = d
	}
	if n <= 0 {
		return o.args.DataErrorf(ws, "cannot tell the number of dimensions from the arguments; give ndim or one value per dimension")
	}
	k := (n + 1) * (n + 1)
	st.n, st.own, st.out = n, grow(st.own, k), grow(st.out, k)
	identity(st.own, n)
	if err := o.gen.matrix(ws, st, n, st.own); err != nil {
		return err
	}
	for _, v := range st.own {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return o.args.DataErrorf(ws, "the transform is not finite (%v)", st.own)
		}
	}
	ws.Out[0].SetShape(n, n+1)
	return nil
}

func (o *transformOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*state)
	n, res := st.n, st.own
	if len(ws.In) > 0 {
		st.in = grow(st.in, (n+1)*(n+1))
		readMatrix(ws.In[0], n, st.in)
		if o.reverse {
			mul(st.out, st.in, st.own, n)
		} else {
			mul(st.out, st.own, st.in, n)
		}
		res = st.out
	}
	writeMatrix(ws.Out[0].Data, res, n)
	return nil
}

// writeMatrix stores the top n rows of an (n+1)^2 matrix as float32 [n, n+1].
func writeMatrix(dst []byte, m []float64, n int) {
	for i := 0; i < n*(n+1); i++ {
		engine.WriteScalar(dst[4*i:], engine.Float32, m[i])
	}
}

// listDims is the dimension count a list argument implies: its length, or 0 when it
// is absent or a single value (which applies to every dimension).
func listDims(a *engine.Args, ws *engine.Workspace, name string, buf *[]float64) (int, error) {
	if !a.Given(name) {
		*buf = (*buf)[:0]
		return 0, nil
	}
	v, err := a.FloatsAt(ws, name, *buf)
	if err != nil {
		return 0, err
	}
	*buf = v
	if len(v) == 0 {
		return 0, argError(a, ws, name, "must not be empty")
	}
	if len(v) == 1 {
		return 0, nil
	}
	return len(v), nil
}

// argError is a constant argument's error, or this sample's when it comes per sample.
func argError(a *engine.Args, ws *engine.Workspace, name, format string, args ...any) error {
	if a.AnyPerSample(name) && ws != nil {
		return a.ArgDataErrorf(ws, name, format, args...)
	}
	return a.Errorf(name, format, args...)
}

// agree merges dimension counts (0: open); a conflict is an error naming both arguments.
func agree(a *engine.Args, ws *engine.Workspace, n int, nName string, d int, dName string) (int, error) {
	switch {
	case d == 0:
		return n, nil
	case n == 0 || n == d:
		return d, nil
	}
	return 0, argError(a, ws, dName, "has %d values but %s implies %d dimensions", d, nName, n)
}

// broadcastTo reads v as n values (one value applies to all).
func broadcastTo(a *engine.Args, ws *engine.Workspace, name string, v []float64, n int) ([]float64, error) {
	out, ok := engine.Broadcast(v, v, n)
	if !ok {
		return nil, argError(a, ws, name, "expected one value or %d, got %d", n, len(v))
	}
	return out, nil
}

// recenter turns m (about the origin) into the same transform about center c:
// T(c) * m * T(-c), i.e. the translation becomes t + c - L c.
func recenter(m []float64, n int, c []float64) {
	k := n + 1
	for r := 0; r < n; r++ {
		s := c[r]
		for j := 0; j < n; j++ {
			s -= m[r*k+j] * c[j]
		}
		m[r*k+n] += s
	}
}

// centerOf reads the center argument (n values) and recenters m about it.
func centerOf(a *engine.Args, ws *engine.Workspace, st *state, slot int, m []float64, n int) error {
	if !a.Given("center") {
		return nil
	}
	v, err := a.FloatsAt(ws, "center", st.vals[slot])
	if err != nil {
		return err
	}
	st.vals[slot] = v
	if len(v) != n {
		return argError(a, ws, "center", "expected %d values (one per dimension), got %d", n, len(v))
	}
	recenter(m, n, v)
	return nil
}
