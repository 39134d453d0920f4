//go:build cuda

package decoders

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterBackend("decoders.image_random_crop", "mixed", func(a *engine.Args) (engine.Operator, error) { return newMixedDecoder(a, true) })
}
