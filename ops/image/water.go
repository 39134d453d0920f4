package image

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "water",
		Doc: "Makes HWC images look as if seen through water, as DALI's water: output pixel " +
			"(x, y) shows the input at (x + ampl_x * sin(freq_x * y + phase_x), " +
			"y + ampl_y * cos(freq_y * x + phase_y)), nearest or bilinear, fill_value outside. " +
			"uint8 or float images.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true,
		InputLayouts: hwc, InputDtypes: displaceDTypes, InputDoc: fromDecoder,
		Args: append([]engine.ArgSpec{
			{Name: "ampl_x", Type: engine.ArgFloat, Default: 10.0, Doc: "amplitude of the wave in x, in pixels"},
			{Name: "ampl_y", Type: engine.ArgFloat, Default: 10.0, Doc: "amplitude of the wave in y, in pixels"},
			{Name: "freq_x", Type: engine.ArgFloat, Default: 0.049087, Doc: "frequency of the wave in x (radians per row)"},
			{Name: "freq_y", Type: engine.ArgFloat, Default: 0.049087, Doc: "frequency of the wave in y (radians per column)"},
			{Name: "phase_x", Type: engine.ArgFloat, Default: 0.0, Doc: "phase of the wave in x (radians)"},
			{Name: "phase_y", Type: engine.ArgFloat, Default: 0.0, Doc: "phase of the wave in y (radians)"},
		}, displaceArgs()...),
	})
	engine.RegisterBackend("water", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o, err := newDisplaceOp(a, "water")
		if err != nil {
			return nil, err
		}
		for _, n := range []string{"ampl_x", "ampl_y", "freq_x", "freq_y", "phase_x", "phase_y"} {
			if v := a.Float(n); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, a.Errorf(n, "expected a finite number, got %g", v)
			}
		}
		ax, ay := a.Float("ampl_x"), a.Float("ampl_y")
		fx, fy := a.Float("freq_x"), a.Float("freq_y")
		px, py := a.Float("phase_x"), a.Float("phase_y")
		// DALI computes the displacement in float32: the same here, so that points on a
		// pixel or image edge fall on the same side (each step rounded to float32).
		f := func(v float64) float64 { return float64(float32(v)) }
		ax, ay, fx, fy, px, py = f(ax), f(ay), f(fx), f(fy), f(px), f(py)
		o.mapFor = func(w, h int) func(x, y int) (float64, float64) {
			return func(x, y int) (float64, float64) {
				sx := f(float64(x) + f(ax*f(math.Sin(f(f(fx*float64(y))+px)))))
				sy := f(float64(y) + f(ay*f(math.Cos(f(f(fy*float64(x))+py)))))
				return sx, sy
			}
		}
		return o, nil
	})
}
