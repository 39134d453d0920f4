package image

import "github.com/godali/godali/engine"

// What most operators of the family take as input 0, declared in their schemas
// (Schema.InputLayouts, InputDtypes, InputDoc) and checked by the graph before Infer.
var (
	hwc         = []string{"HWC"}
	u8          = []engine.DType{engine.UInt8}
	u8OrFloat   = []engine.DType{engine.UInt8, engine.Float32}
	fromDecoder = "e.g. from a decoder"
)

// gpuHWCu8 is what the family's gpu backends take (Schema.Backends["gpu"]): HWC uint8
// images, one kernel launch per batch; other layouts, types and sequences stay on the cpu.
var gpuHWCu8 = engine.BackendFacts{
	InputLayouts: hwc, InputDtypes: u8,
	Doc: "other layouts and types, and sequences, run on device cpu",
}
