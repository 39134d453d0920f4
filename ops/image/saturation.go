package image

import "github.com/godali/godali/engine"

func init() {
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
