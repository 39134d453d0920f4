package engine

import "sync"

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
