package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Helpers for the operator packages (ops/...), which register their schemas and
// factories here from their init functions and build on Operator, Workspace, Tensor and
// Args. An operator reads its arguments through the typed getters (the constant or the
// sample's value alike, DALI's spec.GetArgument<T>(name, &ws, idx)), declares its input
// in the schema (InputLayouts, InputDtypes: the graph checks them before Infer), and
// reports bad data with Args.DataErrorf.

// WriteScalar stores v in b as one value of type d (plain Go conversion: integers
// truncate toward zero and wrap).
func WriteScalar(b []byte, d DType, v float64) { writeScalar(b, d, v) }

// WriteScalarSat stores v in b as one value of type d the way DALI's ConvertSat does:
// integer types round to nearest (halves away from zero) and clamp to their range; NaN
// becomes 0.
func WriteScalarSat(b []byte, d DType, v float64) { writeScalarSat(b, d, v) }

// ReadScalar reads one value of type d from b as float64.
func ReadScalar(b []byte, d DType) float64 { return readScalar(b, d) }

// SampleBytes is the size in bytes of a sample of type d and shape, ok=false when a
// dimension is negative or the size overflows.
func SampleBytes(d DType, shape []int) (int, bool) { return checkedBytes(d, shape) }

// --- messages ---------------------------------------------------------------------------

// Where names the node and its operator in messages: node "x" (op).
func (a *Args) Where() string { return describe(a.Node, a.Schema.Name) }

// Invalidf is a StatusInvalidPipeline error naming the node and the operator, for what
// Infer or a factory refuses when no single argument is at fault (Args.Errorf names one).
func (a *Args) Invalidf(format string, args ...any) error {
	return Errorf(StatusInvalidPipeline, "%s: %s", a.Where(), fmt.Sprintf(format, args...))
}

// DataErrorf is a StatusData error about the sample in ws: it names the sample's file
// (ws.Ref.Path, when the sample has one), the node and the operator. ws may be nil (no
// sample at hand: the message then names the node only).
func (a *Args) DataErrorf(ws *Workspace, format string, args ...any) error {
	return a.sampleError(ws, &Error{Status: StatusData, Msg: a.Where() + ": " + fmt.Sprintf(format, args...)})
}

// ArgDataErrorf is DataErrorf about one argument's value for this sample (a per-sample
// argument out of range): `node "x" (op): argument "angle": <message> for this sample`.
func (a *Args) ArgDataErrorf(ws *Workspace, arg, format string, args ...any) error {
	return a.sampleError(ws, &Error{Status: StatusData,
		Msg: fmt.Sprintf("%s: argument %q: %s for this sample", a.Where(), arg, fmt.Sprintf(format, args...))})
}

func (a *Args) sampleError(ws *Workspace, err error) error {
	src := ""
	if ws != nil && ws.Ref != nil {
		src = ws.Ref.Path
	}
	return &SampleError{Source: src, Node: a.Node, Err: err}
}

// BatchDataErrorf is DataErrorf for RunBatch: about sample i of the batch, naming its
// file.
func (a *Args) BatchDataErrorf(bw *BatchWorkspace, i int, format string, args ...any) error {
	src := ""
	if i >= 0 && i < len(bw.Refs) {
		src = bw.Refs[i].Path
	}
	return &SampleError{Source: src, Node: a.Node, Err: &Error{Status: StatusData, Msg: a.Where() + ": " + fmt.Sprintf(format, args...)}}
}

// --- typed per-sample arguments ------------------------------------------------------------

// AnyPerSample reports whether any of the named arguments comes from a pipeline value
// (arg_inputs), i.e. may change from sample to sample.
func (a *Args) AnyPerSample(names ...string) bool {
	for _, n := range names {
		if _, ok := a.perInput[n]; ok {
			return true
		}
	}
	return false
}

// constNumber is a scalar constant argument as float64 (int, float or bool arguments).
func (a *Args) constNumber(name string) float64 {
	switch v := a.values[name].(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	case bool:
		if v {
			return 1
		}
	case []float64:
		if len(v) == 1 {
			return v[0]
		}
	case []int64:
		if len(v) == 1 {
			return float64(v[0])
		}
	}
	return 0
}

// perSampleScalar reads the one number of a per-sample argument.
func (a *Args) perSampleScalar(ws *Workspace, name string, i int) (float64, error) {
	t := ws.ArgIn[i]
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	if n != 1 || t.DType.Size() == 0 || len(t.Data) < t.DType.Size() {
		return 0, a.ArgDataErrorf(ws, name, "the per-sample input must hold one number per sample, got shape %v of %s", t.Shape, t.DType)
	}
	return readScalar(t.Data, t.DType), nil
}

// FloatAt returns a numeric argument for the workspace's sample: the value of its arg
// input when it is given per sample, else the constant. A per-sample input must hold
// exactly one number per sample.
func (a *Args) FloatAt(ws *Workspace, name string) (float64, error) {
	i, ok := a.perInput[name]
	if !ok {
		return a.constNumber(name), nil
	}
	return a.perSampleScalar(ws, name, i)
}

// IntAt is FloatAt for integer arguments: a per-sample value must be a whole number
// (an integer tensor, or a float one holding an integer).
func (a *Args) IntAt(ws *Workspace, name string) (int, error) {
	i, ok := a.perInput[name]
	if !ok {
		return int(a.constNumber(name)), nil
	}
	v, err := a.perSampleScalar(ws, name, i)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, a.ArgDataErrorf(ws, name, "expected a whole number, got %g", v)
	}
	return int(v), nil
}

// BoolAt is FloatAt for bool arguments: a per-sample value is true when it is not 0 (a
// bool tensor, or numbers as DALI's coin_flip gives them).
func (a *Args) BoolAt(ws *Workspace, name string) (bool, error) {
	i, ok := a.perInput[name]
	if !ok {
		return a.constNumber(name) != 0, nil
	}
	v, err := a.perSampleScalar(ws, name, i)
	return v != 0, err
}

// FloatsAt returns a list argument for the workspace's sample: every element of its arg
// input (any shape, any numeric type, read in order) when it is given per sample, else
// the constant list (a scalar argument gives one element). The result is appended to
// buf[:0], so that callers can reuse it and may modify it.
func (a *Args) FloatsAt(ws *Workspace, name string, buf []float64) ([]float64, error) {
	i, ok := a.perInput[name]
	if !ok {
		switch v := a.values[name].(type) {
		case float64:
			return append(buf[:0], v), nil
		case int64:
			return append(buf[:0], float64(v)), nil
		case []int64:
			out := buf[:0]
			for _, x := range v {
				out = append(out, float64(x))
			}
			return out, nil
		case []float64:
			return append(buf[:0], v...), nil
		}
		return buf[:0], nil
	}
	t, n, err := a.perSampleList(ws, name, i)
	if err != nil {
		return nil, err
	}
	out := buf[:0]
	for k := 0; k < n; k++ {
		out = append(out, t.at(k))
	}
	return out, nil
}

// perSampleList checks a per-sample list argument and returns its tensor and length.
func (a *Args) perSampleList(ws *Workspace, name string, i int) (*Tensor, int, error) {
	t := ws.ArgIn[i]
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	if sz := t.DType.Size(); sz == 0 || len(t.Data) < n*sz {
		return nil, 0, a.ArgDataErrorf(ws, name, "the per-sample input must hold numbers, got shape %v of %s", t.Shape, t.DType)
	}
	return t, n, nil
}

// at is element k of a numeric tensor, as float64.
func (t *Tensor) at(k int) float64 { return readScalar(t.Data[k*t.DType.Size():], t.DType) }

// IntsAt is FloatsAt for integer lists: every element must be a whole number. The
// result is appended to buf[:0].
func (a *Args) IntsAt(ws *Workspace, name string, buf []int) ([]int, error) {
	out := buf[:0]
	i, ok := a.perInput[name]
	if !ok {
		switch v := a.values[name].(type) {
		case []int64:
			for _, x := range v {
				out = append(out, int(x))
			}
		case int64:
			out = append(out, int(v))
		case float64:
			out = append(out, int(v))
		case []float64:
			for _, x := range v {
				out = append(out, int(x))
			}
		}
		return out, nil
	}
	t, n, err := a.perSampleList(ws, name, i)
	if err != nil {
		return nil, err
	}
	for k := 0; k < n; k++ {
		x := t.at(k)
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return nil, a.ArgDataErrorf(ws, name, "expected whole numbers, got %g (element %d)", x, k)
		}
		out = append(out, int(x))
	}
	return out, nil
}

// --- "one value or one per axis" ----------------------------------------------------------

// Broadcast returns v as n values, appended to dst[:0]: v's own when it has n, n copies
// of v[0] when it has one; ok=false for any other length.
func Broadcast[T any](dst, v []T, n int) ([]T, bool) {
	dst = dst[:0]
	switch len(v) {
	case n:
		return append(dst, v...), true
	case 1:
		for range n {
			dst = append(dst, v[0])
		}
		return dst, true
	}
	return dst, false
}

// Pair is Broadcast to two values, as DALI reads "one value or (height, width)".
func Pair[T any](v []T) ([2]T, bool) {
	switch len(v) {
	case 1:
		return [2]T{v[0], v[0]}, true
	case 2:
		return [2]T{v[0], v[1]}, true
	}
	return [2]T{}, false
}

// FloatPair reads a constant list argument given as one value or (height, width); the
// error names the argument.
func (a *Args) FloatPair(name string) ([2]float64, error) {
	if a.AnyPerSample(name) {
		return [2]float64{}, a.Errorf(name, "is given per sample here; the operator reads it with FloatPairAt")
	}
	v, _ := a.FloatsAt(nil, name, nil)
	p, ok := Pair(v)
	if !ok {
		return p, a.Errorf(name, "expected one value or (height, width), got %v", v)
	}
	return p, nil
}

// IntPair is FloatPair for integer lists.
func (a *Args) IntPair(name string) ([2]int, error) {
	if a.AnyPerSample(name) {
		return [2]int{}, a.Errorf(name, "cannot be given per sample here")
	}
	v, _ := a.IntsAt(nil, name, nil)
	p, ok := Pair(v)
	if !ok {
		return p, a.Errorf(name, "expected one value or (height, width), got %v", v)
	}
	return p, nil
}

// FloatPairAt is FloatPair for the workspace's sample (the constant, or the sample's
// value of a per-sample argument).
func (a *Args) FloatPairAt(ws *Workspace, name string) ([2]float64, error) {
	i, ok := a.perInput[name]
	if !ok {
		return a.FloatPair(name)
	}
	t, n, err := a.perSampleList(ws, name, i)
	if err != nil {
		return [2]float64{}, err
	}
	switch n {
	case 1:
		return [2]float64{t.at(0), t.at(0)}, nil
	case 2:
		return [2]float64{t.at(0), t.at(1)}, nil
	}
	return [2]float64{}, a.ArgDataErrorf(ws, name, "expected one value or (height, width), got shape %v", t.Shape)
}

// FloatsNAt reads a list argument for the workspace's sample as n values, one per axis
// (one value applies to every axis), appended to buf[:0].
func (a *Args) FloatsNAt(ws *Workspace, name string, n int, buf []float64) ([]float64, error) {
	v, err := a.FloatsAt(ws, name, buf)
	if err != nil {
		return nil, err
	}
	switch len(v) {
	case n:
		return v, nil
	case 1:
		for len(v) < n {
			v = append(v, v[0])
		}
		return v, nil
	}
	if !a.AnyPerSample(name) {
		return nil, a.Errorf(name, "expected one value or %d, got %v", n, v)
	}
	return nil, a.ArgDataErrorf(ws, name, "expected one value or %d, got %v", n, v)
}

// --- arguments broadcast to a shape ----------------------------------------------------------

// ArgShapeAt is the shape of a per-sample argument's value for the workspace's sample;
// ok=false when the argument is a constant. An operator may derive from it what the
// value spans (normalize: the axes where it has extent 1 are reduced).
func (a *Args) ArgShapeAt(ws *Workspace, name string) (shape []int, ok bool) {
	i, ok := a.perInput[name]
	if !ok {
		return nil, false
	}
	return ws.ArgIn[i].Shape, true
}

// FloatsBroadcastAt reads a numeric argument for the workspace's sample as one value per
// element of shape (C order), appended to buf[:0]: one value (a constant, or a
// per-sample value with one element) fills every element; a per-sample value of exactly
// shape, and a constant list of as many values as shape has elements, give theirs. Any
// other value is an error naming the argument (Errorf for a constant, ArgDataErrorf for
// a sample's value).
func (a *Args) FloatsBroadcastAt(ws *Workspace, name string, shape []int, buf []float64) ([]float64, error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	i, ok := a.perInput[name]
	if !ok {
		v, _ := a.FloatsAt(nil, name, nil)
		out, ok := Broadcast(buf, v, n)
		if !ok {
			return nil, a.Errorf(name, "expected one value or %d (shape %v), got %d", n, shape, len(v))
		}
		return out, nil
	}
	t, k, err := a.perSampleList(ws, name, i)
	if err != nil {
		return nil, err
	}
	out := buf[:0]
	switch {
	case k == 1:
		v := t.at(0)
		for range n {
			out = append(out, v)
		}
	case slices.Equal(t.Shape, shape):
		for j := range n {
			out = append(out, t.at(j))
		}
	default:
		return nil, a.ArgDataErrorf(ws, name, "shape %v does not broadcast to %v (expected one value or that shape)", t.Shape, shape)
	}
	return out, nil
}

// --- input checks ---------------------------------------------------------------------------

// CheckInput reports whether an input's metadata is one the schema accepts: one of
// layouts (or no layout with as many dimensions as one of them; dimensions known), of
// one of dtypes. Empty lists accept anything. The error names the node, the operator and
// the input, and says what was expected. The graph calls it with the schema's
// InputLayouts and InputDtypes for input 0; operators whose constraints depend on their
// arguments or backend call it from Infer.
func CheckInput(a *Args, index int, m TensorMeta, layouts []string, dtypes []DType) error {
	layoutOK := len(layouts) == 0
	for _, l := range layouts {
		if m.Shape != nil && len(m.Shape) == len(l) && (m.Layout == l || m.Layout == "") {
			layoutOK = true
		}
	}
	if layoutOK && (len(dtypes) == 0 || slices.Contains(dtypes, m.DType)) {
		return nil
	}
	want := make([]string, len(dtypes))
	for i, d := range dtypes {
		want[i] = strings.ToLower(d.String())
	}
	what := strings.TrimSpace(strings.Join(layouts, " or ") + " " + strings.Join(want, " or "))
	if d := a.Schema.InputDoc; d != "" {
		what += " (" + d + ")"
	}
	shape := "of unknown rank"
	if m.Shape != nil {
		shape = fmt.Sprint(m.Shape)
	}
	lay := m.Layout
	if lay == "" {
		lay = "no layout"
	}
	msg := fmt.Sprintf("%s: input %d must be %s, got %s %s %s", a.Where(), index, what,
		strings.ToLower(m.DType.String()), lay, shape)
	return Errorf(StatusInvalidPipeline, "%s%s", msg, dalisCheckWording(index, m, layouts, dtypes))
}

// dalisCheckWording is the part of DALI's own message for the same mismatch that DALI's
// tests match: a rank that none of the layouts has, and (one type allowed) the type
// requested and found.
func dalisCheckWording(index int, m TensorMeta, layouts []string, dtypes []DType) string {
	extra := ""
	if m.Shape != nil && len(layouts) > 0 && !slices.ContainsFunc(layouts, func(l string) bool { return len(l) == len(m.Shape) }) {
		extra += fmt.Sprintf(". The number of dimensions %d does not match any of the allowed layouts for input %d. "+
			"Valid layouts are: %s", len(m.Shape), index, strings.Join(layouts, ", "))
	}
	if len(dtypes) == 1 && m.DType != dtypes[0] {
		extra += fmt.Sprintf(" (requested type: %s current buffer type: %s)",
			strings.ToLower(dtypes[0].String()), strings.ToLower(m.DType.String()))
	}
	return extra
}

// checkSchemaInput applies a schema's declared input constraints before Infer: those of
// the node's backend (Schema.Backends) where it declares its own, else the schema's.
func checkSchemaInput(a *Args, device string, in []TensorMeta) error {
	s := a.Schema
	layouts, dtypes := s.InputLayouts, s.InputDtypes
	if b, ok := s.Backends[device]; ok && (len(b.InputLayouts) > 0 || len(b.InputDtypes) > 0) {
		layouts, dtypes = b.InputLayouts, b.InputDtypes
	}
	if len(in) == 0 || (len(layouts) == 0 && len(dtypes) == 0) {
		return nil
	}
	err := CheckInput(a, 0, in[0], layouts, dtypes)
	if b := s.Backends[device]; err != nil && b.Doc != "" {
		err = Errorf(StatusInvalidPipeline, "%v (device %s: %s)", err, device, b.Doc)
	}
	return err
}

// --- gpu operators ---------------------------------------------------------------------------

// RunInBatch is embedded by gpu operators that record each sample in Setup and take the
// output addresses from bw.Out in RunBatch: it is their per-sample Run, which has nothing
// left to do.
type RunInBatch struct{}

// Run does nothing: the operator's RunBatch reads bw.Out[k][i].Dev.
func (RunInBatch) Run(*Workspace) error { return nil }
