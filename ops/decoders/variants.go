package decoders

import "github.com/godali/godali/engine"

// DALI's experimental.decoders.* names: the same operators under a second name (the
// image decoders on the CPU only), made by the engine from the originals once every init
// function has run.
func init() {
	for _, name := range []string{"decoders.image", "decoders.image_random_crop", "decoders.image_crop", "decoders.image_slice"} {
		engine.RegisterVariant("experimental."+name, name, "DALI's experimental name of "+name+". ", "cpu")
	}
	engine.RegisterVariant("experimental.decoders.video", "decoders.video", "DALI's experimental name of decoders.video. ")
}
