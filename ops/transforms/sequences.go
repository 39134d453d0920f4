package transforms

import "github.com/godali/godali/engine"

// The transforms take sequences (engine/sequence.go): a sequence of matrices (layout
// "F**", e.g. from fn.per_frame) or per-frame arguments give one matrix per frame,
// [frames, ndim, ndim+1] with layout "F**".
func init() {
	names := []string{"transforms.translation", "transforms.scale", "transforms.rotation",
		"transforms.shear", "transforms.crop", "transforms.combine"}
	engine.MarkSequenceOps(names...)
	engine.MarkArgFramedOps(names...)
}
