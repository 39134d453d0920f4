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

	engine.RegisterSchema(&engine.Schema{
		Name: "hue",
		Doc: "Rotates the hue of RGB images (HWC, FHWC, DHWC; UINT8, INT16, INT32 or FLOAT) by hue " +
			"degrees, as DALI does (hsv's YIQ transform with saturation and value 1). hue may come " +
			"per sample.",
		Sequences: engine.PerFrame, Volumetric: true,
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: bcLayouts, InputDtypes: bcTypes,
		Args: []engine.ArgSpec{
			{Name: "hue", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "hue change, in degrees"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: UINT8, INT16, INT32 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("hue", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o, err := newColorTwist(a, false)
		if err != nil {
			return nil, err
		}
		o.params[1].constant, o.params[2].constant = 1, 1 // saturation, value neutral
		return o, nil
	})

	engine.RegisterSchema(&engine.Schema{
		Name: "saturation",
		Doc: "Scales the saturation of RGB images (HWC, FHWC, DHWC; UINT8, INT16, INT32 or FLOAT), " +
			"as DALI does (hsv's YIQ transform with hue 0 and value 1): 0 gives grey, 1 leaves the " +
			"image unchanged. saturation may come per sample.",
		Sequences: engine.PerFrame, Volumetric: true,
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: bcLayouts, InputDtypes: bcTypes,
		Args: []engine.ArgSpec{
			{Name: "saturation", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "saturation multiplier"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: UINT8, INT16, INT32 or FLOAT; default the input's"},
		},
	})
	engine.RegisterBackend("saturation", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o, err := newColorTwist(a, false)
		if err != nil {
			return nil, err
		}
		o.params[0].constant, o.params[2].constant = 0, 1 // hue, value neutral
		return o, nil
	})
}
