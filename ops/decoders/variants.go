package decoders

import "github.com/godali/godali/engine"

// DALI's experimental.decoders.* names for the CPU image decoders, the same schemas and
// operators under a second name. (This file's init runs after those of decoder.go,
// image_crop.go and slice.go, which register the originals: Go runs a package's files'
// init functions in file name order.)
func init() {
	for _, n := range []struct {
		name string
		f    engine.Factory
	}{
		{"decoders.image", func(a *engine.Args) (engine.Operator, error) { return newCPUDecoder(a, false) }},
		{"decoders.image_random_crop", func(a *engine.Args) (engine.Operator, error) { return newCPUDecoder(a, true) }},
		{"decoders.image_crop", newCropDecoder},
		{"decoders.image_slice", newSliceDecoder},
	} {
		s, _ := engine.LookupSchema(n.name)
		alias := *s
		alias.Name = "experimental." + n.name
		alias.Doc = "DALI's experimental name of " + n.name + ". " + s.Doc
		alias.Devices, alias.Backends = nil, nil // the cpu backend only
		engine.RegisterSchema(&alias)
		engine.RegisterBackend(alias.Name, "cpu", n.f)
	}
}
