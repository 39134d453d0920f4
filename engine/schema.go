package engine

import (
	"encoding/json"
	"fmt"
	"slices"
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
	// BoolString: a string argument that also takes a bool, read as "true" or "false"
	// (DALI's enable_frame_num: "none", "scalar", "sequence", or False / True).
	BoolString bool `json:"bool_string,omitempty"`
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
	// -> the condition (IfArg, IfArgNot, IfAnyGiven, IfInputsOver). RegisterSchema checks
	// that each names an output and arguments of the schema. A node names the enabled
	// outputs, in schema order.
	OutputIf map[string]OutputCond `json:"output_if,omitempty"`
	// InputLayouts and InputDtypes declare what input 0 (the data input) may be, as
	// DALI's OpSchema::InputLayout does: one of these layouts (an input without a layout
	// must have as many dimensions as one of them) and one of these element types. The
	// graph checks them before Infer (CheckInput), so Infer may index the input's shape
	// by the layout. Empty: anything. InputDoc completes the error ("e.g. from a decoder").
	InputLayouts []string `json:"input_layouts,omitempty"`
	InputDtypes  []DType  `json:"-"`
	InputDoc     string   `json:"-"`
	// Sequences says whether and how the operator takes sequences ("F" layouts) frame by
	// frame (DALI's AllowSequences; engine/sequence.go). Zero: it does not.
	Sequences Sequences `json:"sequences"`
	// Volumetric: the operator takes volumes (a D axis: DHWC, CDHW; DALI's
	// SupportVolumetric). With InputLayouts declared, it must agree with them.
	Volumetric bool `json:"volumetric"`
	// Backends declares every backend other than cpu that the operator has in the CUDA
	// flavour ("gpu", "mixed"), with what it accepts where that is narrower than the
	// schema's InputLayouts/InputDtypes (DALI's per-backend schema facts). Declared in
	// both flavours, so that docs and Python see them; registering an undeclared
	// backend panics at init.
	Backends map[string]BackendFacts `json:"backends,omitempty"`
}

// Sequences describes an operator's sequence support (Schema.Sequences).
type Sequences struct {
	// PerFrame: input 0 with an "F" layout runs frame by frame, every frame seeing the
	// sample's random choices and arguments (fn.per_frame arguments: one per frame).
	PerFrame bool `json:"per_frame"`
	// FramesFromArgs: the frames may come from any sequence input or, with none, from
	// per-frame arguments alone (the transforms; coord_transform).
	FramesFromArgs bool `json:"frames_from_args,omitempty"`
	// ChannelFrames: channel-first sequences ("CF...", e.g. CFHW) go plane by plane
	// (gaussian_blur, laplacian: DALI expands their channels too).
	ChannelFrames bool `json:"channel_frames,omitempty"`
}

// PerFrame is the usual Sequences value: input 0's frames one by one.
var PerFrame = Sequences{PerFrame: true}

// BackendFacts is what one backend accepts (Schema.Backends): input 0's layouts and
// element types (empty: the schema's), checked by the graph before Infer.
type BackendFacts struct {
	InputLayouts []string `json:"input_layouts,omitempty"`
	InputDtypes  []DType  `json:"-"`
	// Doc says what else the backend leaves to the cpu one ("sequences and other
	// types: device cpu").
	Doc string `json:"doc,omitempty"`
}

// MarshalJSON writes the element types by name.
func (b BackendFacts) MarshalJSON() ([]byte, error) {
	type plain BackendFacts
	return json.Marshal(struct {
		plain
		InputDtypes []string `json:"input_dtypes,omitempty"`
	}{plain(b), dtypeNameList(b.InputDtypes)})
}

// MarshalJSON writes the schema for godali_operator_schemas: its fields, the element
// types by name, and the facts DALI's OpSchema answers (allows_sequences).
func (s *Schema) MarshalJSON() ([]byte, error) {
	type plain Schema
	return json.Marshal(struct {
		*plain
		InputDtypes     []string `json:"input_dtypes,omitempty"`
		AllowsSequences bool     `json:"allows_sequences"`
	}{(*plain)(s), dtypeNameList(s.InputDtypes), s.Sequences.PerFrame})
}

func dtypeNameList(ds []DType) []string {
	if len(ds) == 0 {
		return nil
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

// CondKind names the kinds of OutputCond.
type CondKind string

// Kinds of output conditions.
const (
	CondArg        CondKind = "arg"         // a bool argument is true
	CondArgNot     CondKind = "arg_not"     // a string argument differs from Value and each of Values
	CondAnyGiven   CondKind = "any_given"   // one of Args is given
	CondInputsOver CondKind = "inputs_over" // the node has more than Inputs inputs
)

// OutputCond is when a conditional output exists (Schema.OutputIf). Make one with IfArg,
// IfArgNot, IfAnyGiven or IfInputsOver.
type OutputCond struct {
	Kind   CondKind `json:"kind"`
	Args   []string `json:"args,omitempty"`
	Value  string   `json:"value,omitempty"`
	Values []string `json:"values,omitempty"` // more values for CondArgNot
	Inputs int      `json:"inputs,omitempty"`
}

// IfArg: the output exists when the bool argument arg is true (readers.coco's
// polygons with polygon_masks).
func IfArg(arg string) OutputCond { return OutputCond{Kind: CondArg, Args: []string{arg}} }

// IfArgNot: the output exists when the string argument arg differs from value and from
// each of more (random_object_bbox's second box output, absent with format="box";
// experimental.readers.video's frame numbers, absent with "none" or "false").
func IfArgNot(arg, value string, more ...string) OutputCond {
	return OutputCond{Kind: CondArgNot, Args: []string{arg}, Value: value, Values: more}
}

// IfAnyGiven: the output exists when one of the arguments is given (readers.video's
// labels with labels, file_root or file_list).
func IfAnyGiven(args ...string) OutputCond { return OutputCond{Kind: CondAnyGiven, Args: args} }

// IfInputsOver: the output exists when the node has more than n inputs
// (random_bbox_crop's labels).
func IfInputsOver(n int) OutputCond { return OutputCond{Kind: CondInputsOver, Inputs: n} }

// holds reports whether the condition holds for a node with these arguments and inputs.
func (c OutputCond) holds(a *Args, numInputs int) bool {
	switch c.Kind {
	case CondArg:
		return a.Bool(c.Args[0])
	case CondArgNot:
		v := a.String(c.Args[0])
		return v != c.Value && !slices.Contains(c.Values, v)
	case CondAnyGiven:
		for _, arg := range c.Args {
			if a.GivenConstant(arg) {
				return true
			}
		}
	case CondInputsOver:
		return numInputs > c.Inputs
	}
	return false
}

// EnabledOutputs returns the outputs a node with these arguments and numInputs inputs
// produces (OutputIf), in schema order.
func (s *Schema) EnabledOutputs(a *Args, numInputs int) []string {
	out := make([]string, 0, len(s.Outputs))
	for _, name := range s.Outputs {
		if cond, ok := s.OutputIf[name]; !ok || cond.holds(a, numInputs) {
			out = append(out, name)
		}
	}
	return out
}

// check reports a schema's inconsistencies, which RegisterSchema turns into a panic at
// init: a duplicate argument, a conditional output or condition argument that does not
// exist (a typo would otherwise drop the output silently), a condition on an argument
// of the wrong type, sequence flags without PerFrame, Volumetric disagreeing with
// InputLayouts, an undeclared or cpu entry in Backends.
func (s *Schema) check() error {
	seen := map[string]bool{}
	for _, a := range s.Args {
		if seen[a.Name] {
			return fmt.Errorf("declares argument twice: %s", a.Name)
		}
		seen[a.Name] = true
	}
	for _, out := range sortedKeys(s.OutputIf) {
		c := s.OutputIf[out]
		if !slices.Contains(s.Outputs, out) {
			return fmt.Errorf("OutputIf names output %q, which is not among its outputs %v", out, s.Outputs)
		}
		if err := s.checkCond(c); err != nil {
			return fmt.Errorf("OutputIf[%q]: %v", out, err)
		}
	}
	if (s.Sequences.FramesFromArgs || s.Sequences.ChannelFrames) && !s.Sequences.PerFrame {
		return fmt.Errorf("Sequences: FramesFromArgs and ChannelFrames need PerFrame")
	}
	if len(s.InputLayouts) > 0 {
		hasD := slices.ContainsFunc(s.InputLayouts, func(l string) bool { return strings.ContainsRune(l, 'D') })
		if hasD != s.Volumetric {
			return fmt.Errorf("Volumetric is %v but InputLayouts %v say otherwise", s.Volumetric, s.InputLayouts)
		}
	}
	for dev := range s.Backends {
		if dev != "gpu" && dev != "mixed" {
			return fmt.Errorf("Backends declares %q: only gpu and mixed backends are declared (cpu is the schema itself)", dev)
		}
	}
	return nil
}

func (s *Schema) checkCond(c OutputCond) error {
	arg := func(i int, want ...ArgType) error {
		if len(c.Args) <= i {
			return fmt.Errorf("%s condition without an argument", c.Kind)
		}
		spec, ok := s.Arg(c.Args[i])
		if !ok {
			return fmt.Errorf("condition on unknown argument %q; valid: %s", c.Args[i], s.argNames())
		}
		if len(want) > 0 && !slices.Contains(want, spec.Type) {
			return fmt.Errorf("%s condition on argument %q of type %s, want %v", c.Kind, c.Args[i], spec.Type, want)
		}
		return nil
	}
	switch c.Kind {
	case CondArg:
		return arg(0, ArgBool)
	case CondArgNot:
		return arg(0, ArgString)
	case CondAnyGiven:
		if len(c.Args) == 0 {
			return fmt.Errorf("any_given condition without arguments")
		}
		for i := range c.Args {
			if err := arg(i); err != nil {
				return err
			}
		}
		return nil
	case CondInputsOver:
		if c.Inputs < 0 || c.Inputs >= s.MaxInputs {
			return fmt.Errorf("inputs_over %d can never hold or always holds with %d to %d inputs", c.Inputs, s.MinInputs, s.MaxInputs)
		}
		return nil
	}
	return fmt.Errorf("unknown condition kind %q (use IfArg, IfArgNot, IfAnyGiven, IfInputsOver)", c.Kind)
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
	if err := s.check(); err != nil {
		panic("godali: operator " + s.Name + ": " + err.Error())
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
	if _, declared := r.schema.Backends[device]; device != "cpu" && !declared {
		panic("godali: operator " + name + " registers device " + device + " without declaring it in its schema's Backends")
	}
	r.factories[device] = f
	r.schema.Devices = append(r.schema.Devices, device)
	sort.Strings(r.schema.Devices)
}

// LookupSchema returns the schema of an operator.
func LookupSchema(name string) (*Schema, bool) {
	resolveVariants()
	registry.RLock()
	r, ok := registry.ops[name]
	registry.RUnlock()
	if !ok {
		if t := resolveAlias(name); t != name {
			return LookupSchema(t)
		}
	}
	if !ok {
		return nil, false
	}
	return r.schema, true
}

func lookupFactory(name, device string) (Factory, bool) {
	resolveVariants()
	name = resolveAlias(name)
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
	resolveVariants()
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
