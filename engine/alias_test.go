package engine

import (
	"slices"
	"strings"
	"testing"
)

// A variant registered before its base (as init functions of another file may run) is
// built once the base is registered: the base's arguments under its own name and doc,
// and the base's factory (the choice of backends is checked on experimental.decoders.image
// in the CUDA flavour: python/tests/test_schema_facts.py).
func TestVariantBeforeBase(t *testing.T) {
	RegisterVariant("_test.variant_exp", "_test.variant", "The variant. ", "cpu")
	RegisterVariant("_test.variant_all", "_test.variant", "")
	if _, ok := LookupSchema("_test.variant_exp"); ok {
		t.Fatal("a variant of an operator not yet registered is listed")
	}
	RegisterSchema(&Schema{Name: "_test.variant", Doc: "Base doc.", MinInputs: 1, MaxInputs: 1, Outputs: []string{"out"},
		Args: []ArgSpec{{Name: "k", Type: ArgInt, Default: 1, Doc: "k"}}})
	made := ""
	RegisterBackend("_test.variant", "cpu", func(a *Args) (Operator, error) { made = a.Schema.Name; return nil, nil })

	s, ok := LookupSchema("_test.variant_exp")
	if !ok {
		t.Fatal("variant not registered once its base is")
	}
	if s.Name != "_test.variant_exp" || s.Doc != "The variant. Base doc." || len(s.Args) != 1 || s.Args[0].Name != "k" {
		t.Errorf("variant schema: %q %q %v", s.Name, s.Doc, s.Args)
	}
	if !slices.Equal(s.Devices, []string{"cpu"}) || s.Backends != nil {
		t.Errorf("variant limited to cpu: devices %v backends %v", s.Devices, s.Backends)
	}
	if all, _ := LookupSchema("_test.variant_all"); !slices.Equal(all.Devices, []string{"cpu"}) {
		t.Errorf("variant with every backend: devices %v", all.Devices)
	}
	f, ok := lookupFactory("_test.variant_exp", "cpu")
	if !ok {
		t.Fatal("variant has no cpu factory")
	}
	a, err := newArgs("n", s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f(a)
	if made != "_test.variant_exp" {
		t.Errorf("the base's factory got schema %q, want the variant's", made)
	}
	names := map[string]bool{}
	for _, s := range Schemas() {
		names[s.Name] = true
	}
	if !names["_test.variant_exp"] || !names["_test.variant_all"] {
		t.Error("variants missing from Schemas()")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "twice") {
			t.Errorf("a variant registered twice: %v", r)
		}
	}()
	RegisterVariant("_test.variant_exp", "_test.variant", "")
}
