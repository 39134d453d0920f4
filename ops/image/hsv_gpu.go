//go:build cuda

package image

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterBackend("hsv", "gpu", func(a *engine.Args) (engine.Operator, error) { return newGPUColorTwist(a, false) })
}
