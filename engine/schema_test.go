package engine

import (
	"encoding/json"
	"strings"
	"testing"
)

func condSchema(cond map[string]OutputCond) *Schema {
	return &Schema{Name: "_test.cond", MinInputs: 1, MaxInputs: 2, Outputs: []string{"a", "b"},
		Args: []ArgSpec{
			{Name: "flag", Type: ArgBool, Default: false},
			{Name: "format", Type: ArgString, Default: "box"},
			{Name: "labels", Type: ArgIntList},
		},
		OutputIf: cond}
}

// A misspelt or mistyped output condition fails at init (RegisterSchema panics) instead
// of dropping the output silently.
func TestOutputConditionTyposFailAtRegistration(t *testing.T) {
	for _, c := range []struct {
		cond map[string]OutputCond
		want string
	}{
		{map[string]OutputCond{"b": IfArg("flga")}, `unknown argument "flga"`},
		{map[string]OutputCond{"c": IfArg("flag")}, `output "c"`},
		{map[string]OutputCond{"b": IfArg("format")}, `argument "format" of type string`},
		{map[string]OutputCond{"b": IfArgNot("flag", "x")}, `argument "flag" of type bool`},
		{map[string]OutputCond{"b": IfAnyGiven("labels", "lables")}, `unknown argument "lables"`},
		{map[string]OutputCond{"b": IfAnyGiven()}, "without arguments"},
		{map[string]OutputCond{"b": IfInputsOver(2)}, "inputs_over 2"},
		{map[string]OutputCond{"b": {Kind: "given:flag"}}, "unknown condition kind"},
	} {
		err := condSchema(c.cond).check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.cond, err, c.want)
		}
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "_test.cond") || !strings.Contains(r.(string), "flga") {
			t.Fatalf("RegisterSchema with a misspelt condition: recovered %v", r)
		}
	}()
	RegisterSchema(condSchema(map[string]OutputCond{"b": IfArg("flga")}))
}

func TestOutputConditionsHold(t *testing.T) {
	s := condSchema(nil)
	for _, c := range []struct {
		cond   OutputCond
		args   string
		inputs int
		want   []string
	}{
		{IfArg("flag"), `{}`, 1, []string{"a"}},
		{IfArg("flag"), `{"flag": true}`, 1, []string{"a", "b"}},
		{IfArgNot("format", "box"), `{}`, 1, []string{"a"}},
		{IfArgNot("format", "box"), `{"format": "start_end"}`, 1, []string{"a", "b"}},
		{IfAnyGiven("labels", "flag"), `{}`, 1, []string{"a"}},
		{IfAnyGiven("labels", "flag"), `{"labels": [1]}`, 1, []string{"a", "b"}},
		{IfInputsOver(1), `{}`, 1, []string{"a"}},
		{IfInputsOver(1), `{}`, 2, []string{"a", "b"}},
	} {
		s.OutputIf = map[string]OutputCond{"b": c.cond}
		if err := s.check(); err != nil {
			t.Fatal(err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.args), &raw); err != nil {
			t.Fatal(err)
		}
		a, err := newArgs("n", s, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.EnabledOutputs(a, c.inputs); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%+v with %s, %d inputs: outputs %v, want %v", c.cond, c.args, c.inputs, got, c.want)
		}
	}
}

func TestSchemaFactChecks(t *testing.T) {
	for _, c := range []struct {
		s    Schema
		want string
	}{
		{Schema{Name: "x", Sequences: Sequences{ChannelFrames: true}}, "need PerFrame"},
		{Schema{Name: "x", Sequences: Sequences{FramesFromArgs: true}}, "need PerFrame"},
		{Schema{Name: "x", InputLayouts: []string{"HWC", "DHWC"}}, "Volumetric is false"},
		{Schema{Name: "x", InputLayouts: []string{"HWC"}, Volumetric: true}, "Volumetric is true"},
		{Schema{Name: "x", Backends: map[string]BackendFacts{"cpu": {}}}, `declares "cpu"`},
	} {
		if err := c.s.check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.s, err, c.want)
		}
	}
	ok := Schema{Name: "x", InputLayouts: []string{"HWC", "DHWC"}, Volumetric: true,
		Sequences: Sequences{PerFrame: true, ChannelFrames: true}, Backends: map[string]BackendFacts{"gpu": {}}}
	if err := ok.check(); err != nil {
		t.Fatal(err)
	}
}

// A backend other than cpu must be declared in the schema (so that docs and Python see
// it in both flavours).
func TestUndeclaredBackendPanics(t *testing.T) {
	RegisterSchema(&Schema{Name: "_test.undeclared", MinInputs: 1, MaxInputs: 1, Outputs: []string{"out"}})
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "without declaring it") {
			t.Fatalf("recovered %v", r)
		}
	}()
	RegisterBackend("_test.undeclared", "gpu", func(*Args) (Operator, error) { return passOp{}, nil })
}

// The schema JSON carries the facts Python's OpSchema answers from.
func TestSchemaJSONFacts(t *testing.T) {
	s := &Schema{Name: "x", Outputs: []string{"a", "b"}, Args: []ArgSpec{{Name: "flag", Type: ArgBool}},
		InputLayouts: []string{"HWC", "DHWC"}, InputDtypes: []DType{UInt8, Float32}, Volumetric: true,
		Sequences: Sequences{PerFrame: true, ChannelFrames: true},
		Backends:  map[string]BackendFacts{"gpu": {InputLayouts: []string{"HWC"}, InputDtypes: []DType{UInt8}, Doc: "d"}},
		OutputIf:  map[string]OutputCond{"b": IfArg("flag")}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"input_dtypes":     `["UINT8","FLOAT"]`,
		"allows_sequences": `true`,
		"volumetric":       `true`,
		"sequences":        `{"channel_frames":true,"per_frame":true}`,
		"backends":         `{"gpu":{"doc":"d","input_dtypes":["UINT8"],"input_layouts":["HWC"]}}`,
		"output_if":        `{"b":{"args":["flag"],"kind":"arg"}}`,
		"name":             `"x"`,
	}
	for k, w := range want {
		v, _ := json.Marshal(got[k])
		if string(v) != w {
			t.Errorf("%s: %s, want %s", k, v, w)
		}
	}
}
