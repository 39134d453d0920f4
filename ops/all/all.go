// Package all links every operator family into a program: each family registers its
// operators with the engine from its init functions, so importing this package for its
// side effects makes every operator available to pipelines.
//
//	import _ "github.com/godali/godali/ops/all"
package all

import (
	_ "github.com/godali/godali/ops/bbox"
	_ "github.com/godali/godali/ops/decoders"
	_ "github.com/godali/godali/ops/external"
	_ "github.com/godali/godali/ops/image"
	_ "github.com/godali/godali/ops/math"
	_ "github.com/godali/godali/ops/random"
	_ "github.com/godali/godali/ops/readers"
	_ "github.com/godali/godali/ops/tensor"
	_ "github.com/godali/godali/ops/transforms"
)
