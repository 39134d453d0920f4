package image

import "github.com/godali/godali/engine"

func init() {
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
}
