package image

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "contrast",
		Doc: "Changes the contrast of images (HWC, FHWC, DHWC; element-wise) as DALI does: out = " +
			"contrast_center + contrast * (in - contrast_center), float32, integers rounded and " +
			"saturated. Inputs and outputs UINT8, INT16, INT32 or FLOAT. Arguments may come per " +
			"sample.",
		Sequences: engine.PerFrame, Volumetric: true,
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: bcLayouts, InputDtypes: bcTypes,
		Args: []engine.ArgSpec{
			{Name: "contrast", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "contrast multiplier; 0 gives a uniform contrast_center"},
			{Name: "contrast_center", Type: engine.ArgFloat, TensorInput: true, Doc: "the level contrast leaves unchanged; default half of the input type's range (128 for UINT8, 16384 for INT16, 0.5 for FLOAT)"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: UINT8, INT16, INT32 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("contrast", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o, err := newBrightnessContrast(a)
		if err != nil {
			return nil, err
		}
		o.params[0].constant, o.params[1].constant = 1, 0 // brightness neutral
		return o, nil
	})
}
