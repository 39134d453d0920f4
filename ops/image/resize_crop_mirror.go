package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// resize_crop_mirror and fast_resize_crop_mirror (DALI's legacy alias, antialias off by
// default): resize, then crop, then flip, with the results of resize + crop + flip bit for
// bit. (Resizing only the input region the window shows, as DALI does, would save work
// but can differ by 2 levels: the separable resize rounds between its passes, and their
// order depends on the sizes.)
func init() {
	base, _ := engine.LookupSchema("resize") // resize.go's init runs first (file order)
	for _, name := range []string{"resize_crop_mirror", "fast_resize_crop_mirror"} {
		args := make([]engine.ArgSpec, 0, len(base.Args)+6)
		for _, s := range base.Args {
			if s.Name == "antialias" && name == "fast_resize_crop_mirror" {
				s.Default = false
			}
			args = append(args, s)
		}
		args = append(args,
			engine.ArgSpec{Name: "crop", Type: engine.ArgFloatList, TensorInput: true, Doc: "window taken from the resized image (height, width); default: all of it"},
			engine.ArgSpec{Name: "crop_h", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "window height (alternative to crop)"},
			engine.ArgSpec{Name: "crop_w", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "window width (alternative to crop)"},
			engine.ArgSpec{Name: "crop_pos_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "horizontal position of the window in [0, 1]"},
			engine.ArgSpec{Name: "crop_pos_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "vertical position of the window in [0, 1]"},
			engine.ArgSpec{Name: "mirror", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flips of the result, a bit mask: 1 horizontal, 2 vertical, 3 both; may come per sample"},
		)
		doc := "Resizes HWC uint8 images (arguments as resize), crops the window crop at " +
			"crop_pos_x/crop_pos_y from the result and flips it as mirror says (1 horizontally, 2 " +
			"vertically, 3 both), as DALI's resize_crop_mirror (the same results as resize + crop + flip)."
		if name == "fast_resize_crop_mirror" {
			doc = "DALI's legacy alias of resize_crop_mirror, with antialias off by default. " + doc
		}
		engine.RegisterSchema(&engine.Schema{
			Name: name, Doc: doc, Sequences: engine.PerFrame,
			MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
			Args: args,
		})
		engine.RegisterBackend(name, "cpu", func(a *engine.Args) (engine.Operator, error) { return newResizeCropMirror(a) })
	}
}

type resizeCropMirrorOp struct {
	*resizeOp
	crop    bool // a window was given
	dynCrop bool
	cw, ch  int
}

type resizeCropMirrorState struct {
	resizeState
	fullW, fullH int    // the whole resized image
	x, y         int    // the window's corner in it
	full         []byte // the whole resized image, when a window is taken
}

func newResizeCropMirror(a *engine.Args) (*resizeCropMirrorOp, error) {
	r, err := newResize(a)
	if err != nil {
		return nil, err
	}
	o := &resizeCropMirrorOp{resizeOp: r}
	if a.Given("crop") && (a.Given("crop_h") || a.Given("crop_w")) {
		return nil, a.Errorf("crop", "give crop or crop_h/crop_w, not both")
	}
	o.crop = a.Given("crop") || a.Given("crop_h") || a.Given("crop_w")
	o.dynCrop = a.AnyPerSample("crop", "crop_h", "crop_w")
	if err := a.CheckExtentArgs("crop", "crop_h", "crop_w"); err != nil {
		return nil, err
	}
	if o.crop && !o.dynCrop {
		if a.GivenConstant("crop") {
			c, err := a.FloatPair("crop")
			if err != nil {
				return nil, err
			}
			o.ch, o.cw = int(c[0]), int(c[1])
		} else {
			o.ch, o.cw = int(a.Float("crop_h")), int(a.Float("crop_w"))
		}
		if o.cw <= 0 || o.ch <= 0 {
			return nil, a.Errorf("crop", "expected a positive (height, width), got %dx%d", o.ch, o.cw)
		}
	}
	return o, nil
}

func (o *resizeCropMirrorOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m, err := o.resizeOp.Infer(in)
	if err != nil || !o.crop {
		return m, err
	}
	if o.dynCrop {
		m[0].Shape = []int{-1, -1, m[0].Shape[2]}
	} else {
		m[0].Shape = []int{o.ch, o.cw, m[0].Shape[2]}
	}
	return m, nil
}

// OutputSizeFor implements SizeHinter.
func (o *resizeCropMirrorOp) OutputSizeFor(w, h int) (int, int) {
	if o.crop {
		if o.dynCrop {
			return 0, 0
		}
		return o.cw, o.ch
	}
	return o.resizeOp.OutputSizeFor(w, h)
}

func (o *resizeCropMirrorOp) NewWorkerState() any { return &resizeCropMirrorState{} }

func (o *resizeCropMirrorOp) Setup(ws *engine.Workspace) error {
	a := o.args
	in := ws.In[0]
	st := ws.State.(*resizeCropMirrorState)
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	spec, err := o.specAt(ws, &st.spec)
	if err != nil {
		return err
	}
	roi := spec.ROI(w, h)
	ow, oh, err := spec.sampleSize(a, ws, &roi, w, h)
	if err != nil {
		return err
	}
	st.roi = roi
	cw, ch := ow, oh
	if o.crop {
		if cw, ch = o.cw, o.ch; o.dynCrop {
			if cw, ch, err = cropSizeAt(a, ws); err != nil {
				return err
			}
			if cw <= 0 || ch <= 0 {
				return a.ArgDataErrorf(ws, "crop", "expected a positive (height, width), got %dx%d", ch, cw)
			}
		}
		if cw > ow || ch > oh {
			return a.DataErrorf(ws, "crop window %dx%d (height x width) is larger than the resized image %dx%d", ch, cw, oh, ow)
		}
		x, y, err := cropPosAt(a, ws, ow, oh, cw, ch, roundHalfAway)
		if err != nil {
			return err
		}
		st.x, st.y = min(max(x, 0), ow-cw), min(max(y, 0), oh-ch)
	}
	st.fullW, st.fullH = ow, oh
	ws.Out[0].SetShape(ch, cw, c)
	return nil
}

func (o *resizeCropMirrorOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	st := ws.State.(*resizeCropMirrorState)
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	oh, ow := out.Shape[0], out.Shape[1]
	if err := st.plan.Init(w, h, st.roi, st.fullW, st.fullH, o.spec.Interp(w, st.fullW), o.spec.Antialias); err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	dst := out.Data
	if ow != st.fullW || oh != st.fullH {
		if n := st.fullW * st.fullH * c; cap(st.full) < n {
			st.full = make([]byte, n)
		} else {
			st.full = st.full[:n]
		}
		dst = st.full
	}
	if err := st.plan.Resize(dst, in.Data, c, &st.scratch); err != nil {
		return err
	}
	if ow != st.fullW || oh != st.fullH {
		if err := imaging.Crop(out.Data, st.full, st.fullW, st.fullH, c, st.x, st.y, ow, oh, 0); err != nil {
			return err
		}
	}
	mirror, err := o.args.IntAt(ws, "mirror")
	if err != nil {
		return err
	}
	if mirror&1 != 0 {
		mirrorRows(out.Data, ow, oh, c)
	}
	if mirror&2 != 0 {
		row := ow * c
		for y, z := 0, oh-1; y < z; y, z = y+1, z-1 {
			a, b := out.Data[y*row:(y+1)*row], out.Data[z*row:(z+1)*row]
			for i := range a {
				a[i], b[i] = b[i], a[i]
			}
		}
	}
	return nil
}

// mirrorRows flips an HWC image horizontally in place.
func mirrorRows(px []byte, w, h, c int) {
	for y := 0; y < h; y++ {
		row := px[y*w*c : (y+1)*w*c]
		for i, j := 0, w-1; i < j; i, j = i+1, j-1 {
			for k := 0; k < c; k++ {
				row[i*c+k], row[j*c+k] = row[j*c+k], row[i*c+k]
			}
		}
	}
}
