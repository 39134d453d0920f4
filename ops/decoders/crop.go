package decoders

import (
	"math"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
)

// CropArgs are decoders.image_crop's window arguments (crop's and
// crop_mirror_normalize's names).
var CropArgs = []engine.ArgSpec{
	{Name: "crop", Type: engine.ArgFloatList, TensorInput: true, Doc: "crop size (height, width); a scalar applies to both"},
	{Name: "crop_h", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop height (alternative to crop)"},
	{Name: "crop_w", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "crop width (alternative to crop)"},
	{Name: "crop_pos_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "horizontal position of the window in [0, 1]: x = floor(pos * (width - crop_w) + 0.5)"},
	{Name: "crop_pos_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "vertical position of the window in [0, 1]"},
}

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.image_crop",
		Doc: "Decodes a fixed-size window of each image (crop, or crop_h and crop_w, at crop_pos_x/crop_pos_y, " +
			"as the crop operator places it), decoding only that region; without a crop size, the whole image. " +
			"A window larger than the image is an error.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: append(append([]engine.ArgSpec{}, decoderArgs...), CropArgs...),
	})
	engine.RegisterBackend("decoders.image_crop", "cpu", newCropDecoder)
}

type cropDecoder struct{ *cpuDecoder }

func newCropDecoder(a *engine.Args) (engine.Operator, error) {
	d, err := newCPUDecoder(a, false)
	if err != nil {
		return nil, err
	}
	if a.Given("crop") && (a.Given("crop_h") || a.Given("crop_w")) {
		return nil, a.Errorf("crop", "give crop, or crop_h and crop_w, not both")
	}
	return &cropDecoder{cpuDecoder: d.(*cpuDecoder)}, nil
}

// SetConsumer: the window is decoded at full resolution.
func (d *cropDecoder) SetConsumer(engine.Operator) {}

// window places this sample's crop in a w x h image.
func (d *cropDecoder) window(ws *engine.Workspace, w, h int) (codec.Rect, error) {
	a := d.args
	ch, cw := float64(h), float64(w)
	if a.Given("crop") {
		c, err := a.FloatPairAt(ws, "crop")
		if err != nil {
			return codec.Rect{}, err
		}
		ch, cw = c[0], c[1]
	} else if a.Given("crop_h") || a.Given("crop_w") {
		var err error
		if ch, err = a.FloatAt(ws, "crop_h"); err != nil {
			return codec.Rect{}, err
		}
		if cw, err = a.FloatAt(ws, "crop_w"); err != nil {
			return codec.Rect{}, err
		}
	}
	if !(ch >= 1 && cw >= 1 && ch < 1<<30 && cw < 1<<30) {
		return codec.Rect{}, a.ArgDataErrorf(ws, "crop", "expected a positive (height, width), got %gx%g", ch, cw)
	}
	px, err := a.FloatAt(ws, "crop_pos_x")
	if err != nil {
		return codec.Rect{}, err
	}
	py, err := a.FloatAt(ws, "crop_pos_y")
	if err != nil {
		return codec.Rect{}, err
	}
	if !a.Given("crop") && !a.Given("crop_h") && !a.Given("crop_w") {
		return codec.Rect{W: w, H: h}, nil // no crop: the whole image
	}
	r := codec.Rect{W: int(cw), H: int(ch)}
	if r.X, err = a.Extent(ws, "crop_pos_x", px*float64(w-r.W)+0.5, math.Floor); err != nil {
		return r, err
	}
	if r.Y, err = a.Extent(ws, "crop_pos_y", py*float64(h-r.H)+0.5, math.Floor); err != nil {
		return r, err
	}
	if r.X < 0 || r.Y < 0 || r.X+r.W > w || r.Y+r.H > h {
		return r, a.DataErrorf(ws, "cropping window [%d..%d, %d..%d] is not valid for image dimensions [%d x %d]", r.Y, r.Y+r.H, r.X, r.X+r.W, h, w)
	}
	return r, nil
}

func (d *cropDecoder) Setup(ws *engine.Workspace) error {
	st := ws.State.(*decoderState)
	w, h, err := d.probe(ws, st)
	if err != nil {
		return err
	}
	if st.opt.ROI, err = d.window(ws, w, h); err != nil {
		return err
	}
	ow, oh, oc, err := st.dec.OutputSize(ws.In[0].Data, st.info, st.opt)
	if err != nil {
		return err
	}
	ws.Out[0].SetShape(oh, ow, oc)
	return nil
}
