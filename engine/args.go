package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Args holds the checked constant arguments of a node, with defaults filled in, and the
// names of the arguments given per sample (arg_inputs).
type Args struct {
	Node     string
	Schema   *Schema
	values   map[string]any // int64, float64, bool, string, []int64, []float64, []string
	given    map[string]bool
	scalar   map[string]bool // list arguments written as a bare scalar (DALI's random.choice(5))
	perInput map[string]int  // argument name -> index into the node's arg inputs
	argMetas []TensorMeta    // the arg inputs' metadata, set before Infer (ArgInputMeta)
	// Hints set by graph passes (e.g. the final size a decoder's consumer needs).
	Hints map[string]any
}

// newArgs checks raw JSON values against the schema.
func newArgs(node string, s *Schema, raw map[string]json.RawMessage, argInputs []string) (*Args, error) {
	a := &Args{Node: node, Schema: s, values: map[string]any{}, given: map[string]bool{},
		scalar: map[string]bool{}, perInput: map[string]int{}, Hints: map[string]any{}}
	where := describe(node, s.Name) + ": "
	if node == "" {
		where = "" // CheckNode of an operator call: the caller names it
	}
	for name, msg := range raw {
		spec, ok := s.Arg(name)
		if !ok {
			return nil, unknownArg(where, s, name)
		}
		v, err := convertArg(spec, msg)
		if err != nil {
			return nil, Errorf(StatusInvalidPipeline, "%sargument %q: %v", where, name, err)
		}
		a.values[name] = v
		a.given[name] = true
		if t := strings.TrimSpace(string(msg)); t != "" && t[0] != '[' {
			a.scalar[name] = true
		}
	}
	for i, name := range argInputs {
		spec, ok := s.Arg(name)
		if !ok {
			return nil, unknownArg(where, s, name)
		}
		if !spec.TensorInput {
			return nil, Errorf(StatusInvalidPipeline, "%sargument %q cannot be given per sample (arg_inputs); pass a constant in args", where, name)
		}
		if a.given[name] {
			return nil, Errorf(StatusInvalidPipeline, "%sargument %q given both in args and arg_inputs", where, name)
		}
		a.perInput[name] = i
	}
	for i := range s.Args {
		spec := &s.Args[i]
		if _, ok := a.values[spec.Name]; ok {
			continue
		}
		if _, ok := a.perInput[spec.Name]; ok {
			continue
		}
		if spec.Required {
			// DALI's words (its RuntimeError at build).
			return nil, Errorf(StatusInvalidPipeline, "%sNot all required arguments were specified for op %q. Please specify values for arguments: %q", where, s.Name, spec.Name)
		}
		if spec.Default != nil {
			v, err := normalizeDefault(spec)
			if err != nil {
				panic(fmt.Sprintf("godali: bad default of %s.%s: %v", s.Name, spec.Name, err))
			}
			a.values[spec.Name] = v
		}
	}
	return a, nil
}

// unknownArg is the error for an argument the schema does not declare, in DALI's words
// (its KeyError) with the closest declared name and the valid ones.
func unknownArg(where string, s *Schema, name string) error {
	names := make([]string, len(s.Args))
	for i, a := range s.Args {
		names[i] = a.Name
	}
	hint := ""
	if c := closestName(name, names); c != "" {
		hint = fmt.Sprintf(" Did you mean %q?", c)
	}
	return Errorf(StatusInvalidPipeline, "%sArgument %q is not defined for operator %q.%s Valid arguments: %s", where, name, s.Name, hint, s.argNames())
}

// closestName is the name of names nearest to word (edit distance at most a third of
// the longer name), "" when none is that near.
func closestName(word string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(word, n)
		if d*3 <= max(len(word), len(n)) && (bestD < 0 || d < bestD || d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// CheckNode checks one node's arguments against its operator's schema (aliases
// resolved) as a pipeline's creation does, without making the node: the one argument
// checker, which the Python layer calls as each operator is called (DALI checks there).
func CheckNode(n NodeSpec) error {
	s, ok := LookupSchema(n.Op)
	if !ok {
		return Errorf(StatusInvalidPipeline, "unknown operator %q", n.Op)
	}
	names := make([]string, 0, len(n.ArgInputs))
	for name := range n.ArgInputs {
		names = append(names, name)
	}
	sort.Strings(names)
	_, err := newArgs(n.Name, s, n.Args, names)
	return err
}

func normalizeDefault(spec *ArgSpec) (any, error) {
	b, err := json.Marshal(spec.Default)
	if err != nil {
		return nil, err
	}
	return convertArg(spec, b)
}

func convertArg(spec *ArgSpec, msg json.RawMessage) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(msg)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if v == nil {
		return nil, fmt.Errorf("expected %s, got null", spec.Type)
	}
	switch spec.Type {
	case ArgInt:
		return toInt(v)
	case ArgFloat:
		return toFloat(v)
	case ArgBool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("expected bool, got %s", jsonKind(v))
		}
		return b, nil
	case ArgString, ArgDType, ArgImageType, ArgInterpType:
		if b, isBool := v.(bool); isBool && spec.BoolString {
			return strconv.FormatBool(b), nil
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("expected %s (a string), got %s", spec.Type, jsonKind(v))
		}
		switch spec.Type {
		case ArgDType:
			d, err := ParseDType(s)
			if err != nil {
				return nil, err
			}
			return d.String(), nil
		case ArgImageType:
			s = strings.TrimPrefix(s, "types.")
			// (each operator refuses those it does not take: ANY_DATA is the decoders')
			if s != "RGB" && s != "BGR" && s != "GRAY" && s != "YCbCr" && s != "ANY_DATA" {
				return nil, fmt.Errorf("unknown image type %q; valid: RGB, BGR, GRAY, YCbCr, ANY_DATA", s)
			}
		case ArgInterpType:
			s = strings.TrimPrefix(strings.TrimPrefix(s, "types."), "INTERP_")
			switch s {
			case "NN", "LINEAR", "CUBIC", "TRIANGULAR", "LANCZOS3":
			default:
				return nil, fmt.Errorf("unknown interp_type %q; valid: INTERP_NN, INTERP_LINEAR, INTERP_CUBIC, INTERP_TRIANGULAR, INTERP_LANCZOS3", s)
			}
		}
		return s, nil
	case ArgIntList, ArgFloatList, ArgStringList, ArgDTypeList:
		items, ok := v.([]any)
		if !ok {
			items = []any{v} // a scalar broadcasts, as in DALI
		}
		switch spec.Type {
		case ArgIntList:
			out := make([]int64, len(items))
			for i, it := range items {
				x, err := toInt(it)
				if err != nil {
					return nil, fmt.Errorf("element %d: %v", i, err)
				}
				out[i] = x
			}
			return out, nil
		case ArgFloatList:
			out := make([]float64, len(items))
			for i, it := range items {
				x, err := toFloat(it)
				if err != nil {
					return nil, fmt.Errorf("element %d: %v", i, err)
				}
				out[i] = x
			}
			return out, nil
		default:
			out := make([]string, len(items))
			for i, it := range items {
				s, ok := it.(string)
				if !ok {
					return nil, fmt.Errorf("element %d: expected string, got %s", i, jsonKind(it))
				}
				if spec.Type == ArgDTypeList {
					d, err := ParseDType(s)
					if err != nil {
						return nil, fmt.Errorf("element %d: %v", i, err)
					}
					s = d.String()
				}
				out[i] = s
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("unsupported argument type %s", spec.Type)
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), nil
		}
		return 0, fmt.Errorf("expected int, got %s", x)
	case bool:
		return 0, fmt.Errorf("expected int, got bool")
	}
	return 0, fmt.Errorf("expected int, got %s", jsonKind(v))
}

func toFloat(v any) (float64, error) {
	if x, ok := v.(json.Number); ok {
		return x.Float64()
	}
	return 0, fmt.Errorf("expected number, got %s", jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case json.Number:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// Values returns a copy of the constant arguments, defaults filled in, normalised (enum
// spellings, int64/float64 numbers) so that equal settings compare equal.
func (a *Args) Values() map[string]any {
	out := make(map[string]any, len(a.values))
	for k, v := range a.values {
		out[k] = v
	}
	return out
}

// GivenConstant reports whether the argument was written in the node's args, as a
// constant; an argument given per sample (arg_inputs) is not. Most questions are
// Given's: "did the user set it at all?"; GivenConstant is for the places that read the
// constant at build time (a.Floats(name)) and must not when it comes per sample.
func (a *Args) GivenConstant(name string) bool { return a.given[name] }

// IsScalar reports whether a list argument was written as a single value rather than a
// list (both convert to a list; a few arguments, like random.choice's a, tell them apart).
func (a *Args) IsScalar(name string) bool { return a.scalar[name] }

// IsPerSample reports whether the argument comes from an arg input.
func (a *Args) IsPerSample(name string) (int, bool) {
	i, ok := a.perInput[name]
	return i, ok
}

// ArgInputName is the name of the argument given by the node's arg input i ("" if none).
func (a *Args) ArgInputName(i int) string {
	if a == nil {
		return ""
	}
	for n, k := range a.perInput {
		if k == i {
			return n
		}
	}
	return ""
}

// ArgInputMeta is what the graph knows, when the pipeline is built, of the node that
// gives argument name per sample (its type and shape; -1 extents and a nil Shape for
// what is known only when it runs). ok is false for an argument not given per sample.
func (a *Args) ArgInputMeta(name string) (m TensorMeta, ok bool) {
	i, ok := a.perInput[name]
	if !ok || i >= len(a.argMetas) {
		return TensorMeta{}, false
	}
	return a.argMetas[i], true
}

// strictArgs: in test binaries, reading an argument the operator's schema lacks, or with
// an accessor of another type, panics (a misspelled name would otherwise read as the
// zero value); GODALI_ARGS_AUDIT=1 lists them all on stderr instead (go test -v).
// Library builds never panic here.
var strictArgs = testing.Testing()

// check panics, in tests, when name is not one of the schema's arguments of one of types.
func (a *Args) check(name string, types ...ArgType) {
	if !strictArgs || a == nil || a.Schema == nil {
		return
	}
	for i := range a.Schema.Args {
		s := &a.Schema.Args[i]
		if s.Name != name {
			continue
		}
		for _, t := range types {
			if s.Type == t {
				return
			}
		}
		if os.Getenv("GODALI_ARGS_AUDIT") == "1" {
			fmt.Fprintf(os.Stderr, "ARGAUDIT engine: operator %s reads argument %q as %v, its schema declares %s\n", a.Schema.Name, name, types, s.Type)
			return
		}
		panic(fmt.Sprintf("engine: operator %s reads argument %q as %v, its schema declares %s",
			a.Schema.Name, name, types, s.Type))
	}
	if os.Getenv("GODALI_ARGS_AUDIT") == "1" {
		fmt.Fprintf(os.Stderr, "ARGAUDIT engine: operator %s reads argument %q, which its schema lacks\n", a.Schema.Name, name)
		return
	}
	panic(fmt.Sprintf("engine: operator %s reads argument %q, which its schema lacks", a.Schema.Name, name))
}

// Declares reports whether the operator's schema has the argument (code shared by
// several operators reads an optional one only where it exists).
func (a *Args) Declares(name string) bool {
	if a == nil || a.Schema == nil {
		return false
	}
	for i := range a.Schema.Args {
		if a.Schema.Args[i].Name == name {
			return true
		}
	}
	return false
}

// Int returns an int argument (0 if absent without default).
func (a *Args) Int(name string) int {
	a.check(name, ArgInt)
	v, _ := a.values[name].(int64)
	return int(v)
}

// Float returns a float argument.
func (a *Args) Float(name string) float64 {
	a.check(name, ArgFloat)
	v, _ := a.values[name].(float64)
	return v
}

// Bool returns a bool argument.
func (a *Args) Bool(name string) bool {
	a.check(name, ArgBool)
	v, _ := a.values[name].(bool)
	return v
}

// String returns a string or enum argument.
func (a *Args) String(name string) string {
	a.check(name, ArgString, ArgDType, ArgImageType, ArgInterpType)
	v, _ := a.values[name].(string)
	return v
}

// Ints returns an int list argument.
func (a *Args) Ints(name string) []int64 {
	a.check(name, ArgIntList)
	v, _ := a.values[name].([]int64)
	return v
}

// Floats returns a float list argument.
func (a *Args) Floats(name string) []float64 {
	a.check(name, ArgFloatList)
	v, _ := a.values[name].([]float64)
	return v
}

// Strings returns a string list argument.
func (a *Args) Strings(name string) []string {
	a.check(name, ArgStringList, ArgDTypeList)
	v, _ := a.values[name].([]string)
	return v
}

// DType returns a dtype argument.
func (a *Args) DType(name string) DType {
	d, _ := ParseDType(a.String(name))
	return d
}

// Errorf formats an argument error that names the node, the operator and the argument.
func (a *Args) Errorf(arg, format string, args ...any) error {
	return Errorf(StatusInvalidPipeline, "%s: argument %q: %s", describe(a.Node, a.Schema.Name), arg, fmt.Sprintf(format, args...))
}

// Given reports whether the argument was given at all, as a constant (args) or per
// sample (arg_inputs): the question "did the user set it, or is it the default?".
// GivenConstant asks the narrower one.
func (a *Args) Given(name string) bool {
	_, per := a.perInput[name]
	return per || a.given[name]
}
