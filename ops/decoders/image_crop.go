package decoders

import (
	"math"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
)

// CropWindowArgs are DALI's fixed crop window arguments (crop, crop_pos_x, ...), as
// decoders.image_crop takes them.
var CropWindowArgs = []engine.ArgSpec{
	{Name: "crop", Type: engine.ArgFloatList, TensorInput: true, Doc: "window size (height, width), in pixels"},
	{Name: "crop_h", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "window height (alternative to crop)"},
	{Name: "crop_w", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "window width (alternative to crop)"},
	{Name: "crop_pos_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "horizontal position of the window, 0 (left) to 1 (right)"},
	{Name: "crop_pos_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "vertical position of the window, 0 (top) to 1 (bottom)"},
	{Name: "rounding", Type: engine.ArgString, Default: "round", Doc: "how the window's start pos * (size - crop) becomes a pixel: round (half away from zero) or truncate"},
}

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.image_crop",
		Doc: "Decodes a fixed window of each image, as DALI's decoders.image_crop: the window is crop " +
			"(or crop_h x crop_w) pixels with its start at crop_pos * (size - crop), decoding only " +
			"that region. A window larger than the image is an error naming the sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: append(append([]engine.ArgSpec{}, decoderArgs...), CropWindowArgs...),
	})
	engine.RegisterBackend("decoders.image_crop", "cpu", newCropDecoder)

}

type cropDecoder struct {
	*sliceDecoder
	truncate bool
}

func newCropDecoder(a *engine.Args) (engine.Operator, error) {
	d, err := newCPUDecoder(a, false)
	if err != nil {
		return nil, err
	}
	if a.Given("crop") && (a.Given("crop_h") || a.Given("crop_w")) {
		return nil, a.Errorf("crop", "give crop or crop_h/crop_w, not both")
	}
	if !a.Given("crop") && !(a.Given("crop_h") && a.Given("crop_w")) {
		return nil, a.Errorf("crop", "give the window size: crop, or crop_h and crop_w")
	}
	o := &cropDecoder{sliceDecoder: &sliceDecoder{cpuDecoder: d.(*cpuDecoder), slice: &Slice{args: a}}}
	switch a.String("rounding") {
	case "round":
	case "truncate":
		o.truncate = true
	default:
		return nil, a.Errorf("rounding", "expected round or truncate, got %q", a.String("rounding"))
	}
	return o, nil
}

func (d *cropDecoder) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return d.cpuDecoder.Infer(in[:1])
}

func (d *cropDecoder) Setup(ws *engine.Workspace) error {
	st := ws.State.(*sliceState)
	w, h, err := d.probe(ws, &st.decoderState)
	if err != nil {
		return err
	}
	r, err := d.window(ws, w, h)
	if err != nil {
		return err
	}
	return d.setupWindow(ws, st, r, false)
}

// window is the sample's crop window in a w x h image.
func (d *cropDecoder) window(ws *engine.Workspace, w, h int) (codec.Rect, error) {
	a := d.slice.args
	var size [2]float64 // height, width
	var err error
	if a.Given("crop") {
		if size, err = a.FloatPairAt(ws, "crop"); err != nil {
			return codec.Rect{}, err
		}
	} else {
		if size[0], err = a.FloatAt(ws, "crop_h"); err != nil {
			return codec.Rect{}, err
		}
		if size[1], err = a.FloatAt(ws, "crop_w"); err != nil {
			return codec.Rect{}, err
		}
	}
	ch, cw := int(size[0]), int(size[1])
	if !(size[0] >= 1 && size[1] >= 1) || size[0] > 1<<30 || size[1] > 1<<30 {
		return codec.Rect{}, a.ArgDataErrorf(ws, "crop", "expected a window of at least 1x1 pixels, got %gx%g", size[0], size[1])
	}
	if cw > w || ch > h {
		return codec.Rect{}, a.ArgDataErrorf(ws, "crop", "the %dx%d window (height x width) is larger than the %dx%d image", ch, cw, h, w)
	}
	var pos [2]float64
	for i, n := range []string{"crop_pos_x", "crop_pos_y"} {
		if pos[i], err = a.FloatAt(ws, n); err != nil {
			return codec.Rect{}, err
		}
		if !(pos[i] >= 0 && pos[i] <= 1) {
			return codec.Rect{}, a.ArgDataErrorf(ws, n, "expected a value in [0, 1], got %g", pos[i])
		}
	}
	x, y := pos[0]*float64(w-cw), pos[1]*float64(h-ch)
	if d.truncate {
		x, y = math.Trunc(x), math.Trunc(y)
	} else {
		x, y = math.Round(x), math.Round(y)
	}
	return codec.Rect{X: int(x), Y: int(y), W: cw, H: ch}, nil
}
