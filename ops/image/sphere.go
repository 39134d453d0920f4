package image

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "sphere",
		Doc: "Bulges HWC images as if mapped on a sphere, as DALI's sphere: with the centre " +
			"(cx, cy) = ((w - 1) / 2, (h - 1) / 2) in pixel indices and d = max(w / 2, h / 2) " +
			"(integer halves), output pixel (x, y) shows the input at (cx + r * (x - cx), " +
			"cy + r * (y - cy)) where r is the distance of (x, y) from the centre divided by d " +
			"(INTERP_NN: the nearest pixel); fill_value outside. uint8 or float images.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true,
		InputLayouts: hwc, InputDtypes: displaceDTypes, InputDoc: fromDecoder,
		Args: displaceArgs(),
	})
	engine.RegisterBackend("sphere", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o, err := newDisplaceOp(a, "sphere")
		if err != nil {
			return nil, err
		}
		o.mapFor = sphereMap
		return o, nil
	})
}

func sphereMap(w, h int) func(x, y int) (float64, float64) {
	// DALI's mapping, measured on coordinate-coded images with its CPU operator (odd and
	// even sides): pixel indices around the centre ((w-1)/2, (h-1)/2), the distance
	// divided by max(w/2, h/2) (integer halves), the source index rounded. Displacement
	// takes continuous coordinates (pixel i covers [i, i+1)): + 0.5.
	cx, cy := float64(w-1)/2, float64(h-1)/2
	d := float64(max(w/2, h/2, 1))
	return func(x, y int) (float64, float64) {
		dx, dy := float64(x)-cx, float64(y)-cy
		r := math.Sqrt(dx*dx+dy*dy) / d
		return cx + r*dx + 0.5, cy + r*dy + 0.5
	}
}
