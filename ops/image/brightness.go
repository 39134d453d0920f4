package image

import "github.com/godali/godali/engine"

// brightness and contrast: DALI's single-purpose halves of brightness_contrast, run by
// its operator with the other half neutral.

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "brightness",
		Doc: "Changes the brightness of images (HWC, FHWC, DHWC; element-wise) as DALI does: out = " +
			"brightness_shift * output_range + brightness * in (output_range the output type's " +
			"maximum, 1 for FLOAT), float32, integers rounded and saturated. Inputs and outputs " +
			"UINT8, INT16, INT32 or FLOAT. Arguments may come per sample.",
		Sequences: engine.PerFrame, Volumetric: true,
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: bcLayouts, InputDtypes: bcTypes,
		Args: []engine.ArgSpec{
			{Name: "brightness", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "brightness multiplier"},
			{Name: "brightness_shift", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "shift, in units of the output range"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: UINT8, INT16, INT32 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("brightness", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o, err := newBrightnessContrast(a)
		if err != nil {
			return nil, err
		}
		o.params[2].constant, o.params[3].constant = 1, 0 // contrast neutral
		return o, nil
	})
}
