package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ArgType is the type of an operator argument, as written in the schema JSON.
type ArgType string

// Argument types.
const (
	ArgInt        ArgType = "int"
	ArgFloat      ArgType = "float"
	ArgBool       ArgType = "bool"
	ArgString     ArgType = "string"
	ArgIntList    ArgType = "int_list"
	ArgFloatList  ArgType = "float_list"
	ArgStringList ArgType = "string_list"
	ArgDType      ArgType = "dtype"
	ArgDTypeList  ArgType = "dtype_list"
	ArgImageType  ArgType = "image_type"
	ArgInterpType ArgType = "interp_type"
)

// ArgSpec describes one argument of an operator.
type ArgSpec struct {
	Name        string  `json:"name"`
	Type        ArgType `json:"type"`
	Default     any     `json:"default"`
	Required    bool    `json:"required"`
	TensorInput bool    `json:"tensor_input"` // may be given per sample through arg_inputs
	Doc         string  `json:"doc"`
}

// Schema is the one description of an operator: the registry, the argument checks, the
// Python fn namespace and the docs all come from it.
type Schema struct {
	Name      string    `json:"name"`
	Doc       string    `json:"doc"`
	Devices   []string  `json:"devices"`
	MinInputs int       `json:"min_inputs"`
	MaxInputs int       `json:"max_inputs"`
	Outputs   []string  `json:"outputs"`
	Args      []ArgSpec `json:"args"`
	// VariableOutputs: the node names as many outputs as its arguments call for (one
	// per webdataset extension set, one per tfrecord feature); Outputs then names the
	// first one only, and Infer says how many there are.
	VariableOutputs bool `json:"variable_outputs,omitempty"`
	// IsReader marks operators that choose the samples of a batch (BatchSource).
	IsReader bool `json:"is_reader"`
	// Stateless random generators have no inputs and draw from the sample's stream.
	Random bool `json:"random"`
	// HostOnly marks operators that have a cpu backend and no other in any flavour, so
	// that a "gpu" request is refused with that reason (not "use the CUDA flavour").
	HostOnly bool `json:"host_only"`
	// PositionalArgs are arguments that DALI takes as positional constant inputs (e.g.
	// random.choice's a); the Python fn functions accept them positionally.
	PositionalArgs []string `json:"positional_args,omitempty"`
	// OutputIf makes outputs conditional, like DALI operators whose outputs depend on
	// their arguments (readers.coco's image_ids, random_bbox_crop's labels): output name
	// -> the bool argument that must be true, "inputs>N" (the node has more than N
	// inputs), "given:a|b" (one of the arguments a, b is given: readers.video's labels),
	// or "arg!=value" (a string argument differs from value: random_object_bbox's second
	// box output, absent with format="box"). A node names the enabled outputs, in schema
	// order.
	OutputIf map[string]string `json:"output_if,omitempty"`
	// InputLayouts and InputDtypes declare what input 0 (the data input) may be, as
	// DALI's OpSchema::InputLayout does: one of these layouts (an input without a layout
	// must have as many dimensions as one of them) and one of these element types. The
	// graph checks them before Infer (CheckInput), so Infer may index the input's shape
	// by the layout. Empty: anything. InputDoc completes the error ("e.g. from a decoder").
	InputLayouts []string `json:"input_layouts,omitempty"`
	InputDtypes  []DType  `json:"-"`
	InputDoc     string   `json:"-"`
}

// EnabledOutputs returns the outputs a node with these arguments and numInputs inputs
// produces (OutputIf), in schema order.
func (s *Schema) EnabledOutputs(a *Args, numInputs int) []string {
	out := make([]string, 0, len(s.Outputs))
	for _, name := range s.Outputs {
		cond, ok := s.OutputIf[name]
		if !ok {
			out = append(out, name)
			continue
		}
		if names, ok := strings.CutPrefix(cond, "given:"); ok {
			for _, arg := range strings.Split(names, "|") {
				if a.Has(arg) {
					out = append(out, name)
					break
				}
			}
			continue
		}
		if arg, val, ok := strings.Cut(cond, "!="); ok {
			if a.String(arg) != val {
				out = append(out, name)
			}
			continue
		}
		var n int
		if _, err := fmt.Sscanf(cond, "inputs>%d", &n); err == nil {
			if numInputs > n {
				out = append(out, name)
			}
			continue
		}
		if a.Bool(cond) {
			out = append(out, name)
		}
	}
	return out
}

// Arg returns the spec of the named argument.
func (s *Schema) Arg(name string) (*ArgSpec, bool) {
	for i := range s.Args {
		if s.Args[i].Name == name {
			return &s.Args[i], true
		}
	}
	return nil, false
}

func (s *Schema) argNames() string {
	names := make([]string, len(s.Args))
	for i, a := range s.Args {
		names[i] = a.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Factory creates an operator instance for one node from its checked arguments.
type Factory func(args *Args) (Operator, error)

type registration struct {
	schema    *Schema
	factories map[string]Factory // by device: cpu, mixed, gpu
}

var registry = struct {
	sync.RWMutex
	ops map[string]*registration
}{ops: map[string]*registration{}}

// RegisterSchema adds an operator schema. A name registered twice panics at init: it is a
// programming error, caught by every test run.
func RegisterSchema(s *Schema) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.ops[s.Name]; dup {
		panic("godali: operator schema registered twice: " + s.Name)
	}
	seen := map[string]bool{}
	for _, a := range s.Args {
		if seen[a.Name] {
			panic("godali: operator " + s.Name + " declares argument twice: " + a.Name)
		}
		seen[a.Name] = true
	}
	registry.ops[s.Name] = &registration{schema: s, factories: map[string]Factory{}}
}

// RegisterBackend adds the implementation of an operator for one device. Registering a
// backend without a schema, or twice, panics at init.
func RegisterBackend(name, device string, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	r, ok := registry.ops[name]
	if !ok {
		panic("godali: backend registered for operator without schema: " + name)
	}
	if _, dup := r.factories[device]; dup {
		panic("godali: backend registered twice: " + name + " " + device)
	}
	if device != "cpu" && r.schema.HostOnly {
		panic("godali: operator " + name + " is marked HostOnly but registers device " + device)
	}
	r.factories[device] = f
	r.schema.Devices = append(r.schema.Devices, device)
	sort.Strings(r.schema.Devices)
}

// LookupSchema returns the schema of an operator.
func LookupSchema(name string) (*Schema, bool) {
	registry.RLock()
	defer registry.RUnlock()
	r, ok := registry.ops[name]
	if !ok {
		return nil, false
	}
	return r.schema, true
}

func lookupFactory(name, device string) (Factory, bool) {
	registry.RLock()
	defer registry.RUnlock()
	r, ok := registry.ops[name]
	if !ok {
		return nil, false
	}
	f, ok := r.factories[device]
	return f, ok
}

// Schemas returns every registered schema, sorted by name.
func Schemas() []*Schema {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]*Schema, 0, len(registry.ops))
	for _, r := range registry.ops {
		out = append(out, r.schema)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func operatorNames() string {
	var names []string
	for _, s := range Schemas() {
		if !strings.HasPrefix(s.Name, "_") {
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, ", ")
}

func errUnknownOp(node, op string) error {
	return Errorf(StatusInvalidPipeline, "node %q: unknown operator %q; valid: %s", node, op, operatorNames())
}

func errHostOnly(node, op, device string) error {
	return Errorf(StatusInvalidPipeline, "%s: %s has only a cpu implementation, in every godali flavour; device %q is not available (use device \"cpu\")",
		describe(node, op), op, device)
}

// describe returns "node \"x\" (op)" for messages.
func describe(node, op string) string { return fmt.Sprintf("node %q (%s)", node, op) }
