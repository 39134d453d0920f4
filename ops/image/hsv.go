package image

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "hsv",
		Doc: "Adjusts hue, saturation and value of RGB images (HWC, FHWC, DHWC; UINT8, INT16, INT32 " +
			"or FLOAT) the way DALI does: a linear transform in YIQ space (rotate the chroma by hue " +
			"degrees, scale it by saturation, scale all by value), applied as one 3x3 matrix in " +
			"float32. Arguments may come per sample.",
		Sequences: engine.PerFrame, Volumetric: true,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: bcLayouts, InputDtypes: bcTypes, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "hue", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "hue change, in degrees (additive; wraps around)"},
			{Name: "saturation", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "saturation multiplier"},
			{Name: "value", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "value (brightness) multiplier"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: UINT8, INT16, INT32 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("hsv", "cpu", func(a *engine.Args) (engine.Operator, error) { return newColorTwist(a, false) })
}
