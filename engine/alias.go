package engine

import (
	"slices"
	"sort"
	"sync"
)

// Aliases: other names of registered operators (DALI's former flat names, file_reader for
// readers.file), resolved when a pipeline is built, so that a pipeline description from C
// or from Python may use either; the Python package makes its fn.<alias> names from
// Aliases() (godali_operator_schemas' "aliases").
var aliases = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

// RegisterAlias makes alias another name of the operator target. It may run before or
// after target's registration (it is resolved on use); an alias that is already a name, or
// one registered twice, panics at init.
func RegisterAlias(alias, target string) {
	aliases.Lock()
	defer aliases.Unlock()
	if _, dup := aliases.m[alias]; dup {
		panic("godali: operator alias registered twice: " + alias)
	}
	aliases.m[alias] = target
}

// resolveAlias returns the operator name an alias stands for (name itself otherwise).
func resolveAlias(name string) string {
	aliases.RLock()
	defer aliases.RUnlock()
	if t, ok := aliases.m[name]; ok {
		return t
	}
	return name
}

// Aliases returns alias -> operator for the aliases whose operator is registered.
func Aliases() map[string]string {
	aliases.RLock()
	defer aliases.RUnlock()
	out := make(map[string]string, len(aliases.m))
	for a, t := range aliases.m {
		if _, ok := LookupSchema(t); ok {
			out[a] = t
		}
	}
	return out
}

// Variants: DALI's second names of an operator that are not deprecated
// (experimental.decoders.image beside decoders.image). Unlike an alias, a variant is an
// operator of its own in the schema list (Python's fn and the reference list it, without a
// deprecation warning), with its own doc and, possibly, fewer backends. It is built from
// its base when the registry is next read once the base is registered (after every init
// function has run, for the operators of ops/all), so no registration depends on the order
// of init functions.
var variants = struct {
	sync.Mutex
	pending map[string]variant
}{pending: map[string]variant{}}

type variant struct {
	base, doc string
	devices   []string // the base's backends the variant has; nil: all of them
}

// RegisterVariant makes name an operator that is base under another name: base's schema
// (arguments, inputs, outputs, facts) with doc written before base's doc, and base's
// factories for devices (none given: every device base has). A name registered twice, or
// one that is also an operator or an alias, panics.
func RegisterVariant(name, base, doc string, devices ...string) {
	variants.Lock()
	defer variants.Unlock()
	registry.RLock()
	_, dup := registry.ops[name]
	registry.RUnlock()
	if _, pending := variants.pending[name]; dup || pending {
		panic("godali: operator variant registered twice, or also an operator: " + name)
	}
	variants.pending[name] = variant{base: base, doc: doc, devices: devices}
}

// resolveVariants registers the schema and factories of each pending variant whose base
// is registered; the registry's readers (LookupSchema, Schemas, a pipeline's build) call
// it first.
func resolveVariants() {
	variants.Lock()
	defer variants.Unlock()
	if len(variants.pending) == 0 {
		return
	}
	registry.Lock()
	defer registry.Unlock()
	for name, v := range variants.pending {
		r, ok := registry.ops[v.base]
		if !ok {
			continue
		}
		if _, dup := registry.ops[name]; dup {
			panic("godali: operator variant " + name + " is also an operator")
		}
		if t := resolveAlias(name); t != name {
			panic("godali: operator variant " + name + " is also an alias")
		}
		s := *r.schema
		s.Name, s.Doc = name, v.doc+r.schema.Doc
		s.Devices, s.Backends = nil, nil
		reg := &registration{schema: &s, factories: map[string]Factory{}}
		for dev, f := range r.factories {
			if v.devices != nil && !slices.Contains(v.devices, dev) {
				continue
			}
			reg.factories[dev] = f
			s.Devices = append(s.Devices, dev)
		}
		for dev, facts := range r.schema.Backends { // declared in every flavour
			if v.devices == nil || slices.Contains(v.devices, dev) {
				if s.Backends == nil {
					s.Backends = map[string]BackendFacts{}
				}
				s.Backends[dev] = facts
			}
		}
		sort.Strings(s.Devices)
		registry.ops[name] = reg
		delete(variants.pending, name)
	}
}
