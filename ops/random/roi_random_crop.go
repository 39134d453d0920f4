package random

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "roi_random_crop",
		Doc: "Draws the start (int64, one per dimension) of a crop window of crop_shape that contains the region " +
			"of interest [roi_start, roi_end) when the window is larger than it, or lies inside it when smaller, " +
			"uniformly among such starts; with in_shape (or an input, whose leading dimensions, one per crop_shape " +
			"value, are used) the window also stays inside the input where the ROI allows.",
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"anchor"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "crop_shape", Type: engine.ArgIntList, Required: true, TensorInput: true, Doc: "the window's extent, one value per dimension"},
			{Name: "roi_start", Type: engine.ArgIntList, Required: true, TensorInput: true, Doc: "the region of interest's start"},
			{Name: "roi_end", Type: engine.ArgIntList, TensorInput: true, Doc: "the region of interest's end (exclusive); exclusive with roi_shape"},
			{Name: "roi_shape", Type: engine.ArgIntList, TensorInput: true, Doc: "the region of interest's extent; exclusive with roi_end"},
			{Name: "in_shape", Type: engine.ArgIntList, TensorInput: true, Doc: "the input's shape, to keep the window inside it (exclusive with an input)"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
		},
	})
	engine.RegisterBackend("roi_random_crop", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if a.Given("roi_end") == a.Given("roi_shape") {
			return nil, a.Errorf("roi_end", "Either ROI end or ROI shape should be defined, but not both (give roi_end or roi_shape)")
		}
		return &roiCropOp{args: a}, nil
	})
}

type roiCropOp struct{ args *engine.Args }

type roiState struct {
	crop, start, end, shape []int
}

func (o *roiCropOp) NewWorkerState() any { return &roiState{} }

func (o *roiCropOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if len(in) > 0 && o.args.Given("in_shape") {
		return nil, o.args.Errorf("in_shape", "``in_shape`` argument is incompatible with providing an input. (the input's shape is used)")
	}
	n := -1
	if !o.args.AnyPerSample("crop_shape") {
		n = len(o.args.Ints("crop_shape"))
	}
	return []engine.TensorMeta{{DType: engine.Int64, Shape: []int{n}}}, nil
}

func (o *roiCropOp) read(ws *engine.Workspace, st *roiState) error {
	a := o.args
	var err error
	if st.crop, err = a.IntsAt(ws, "crop_shape", st.crop); err != nil {
		return err
	}
	n := len(st.crop)
	if st.start, err = a.IntsAt(ws, "roi_start", st.start); err != nil {
		return err
	}
	if a.Given("roi_end") {
		st.end, err = a.IntsAt(ws, "roi_end", st.end)
	} else {
		st.end, err = a.IntsAt(ws, "roi_shape", st.end)
		if err == nil && len(st.end) == n && len(st.start) == n {
			for d := range st.end {
				st.end[d] += st.start[d]
			}
		}
	}
	if err != nil {
		return err
	}
	st.shape = st.shape[:0]
	if len(ws.In) > 0 {
		st.shape = append(st.shape, ws.In[0].Shape...)
	} else if a.Given("in_shape") {
		if st.shape, err = a.IntsAt(ws, "in_shape", st.shape); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"roi_start", st.start}, {"roi_end", st.end}} {
		if len(l.v) != n {
			return a.ArgDataErrorf(ws, l.name, "has %d values but crop_shape has %d", len(l.v), n)
		}
	}
	if len(ws.In) > 0 && len(st.shape) > n {
		// DALI reads the input's leading dimensions, one per crop_shape value (an HWC
		// image with a 2-D window: its height and width).
		st.shape = st.shape[:n]
	}
	if len(st.shape) > 0 && len(st.shape) != n {
		return a.ArgDataErrorf(ws, "in_shape", "the input shape %v has %d dimensions but crop_shape has %d", st.shape, len(st.shape), n)
	}
	for d := 0; d < n; d++ {
		switch {
		case len(st.shape) > 0 && st.shape[d] < 0:
			return a.ArgDataErrorf(ws, "in_shape", "Input shape can't be negative. Got %v", st.shape)
		case st.crop[d] < 0:
			return a.ArgDataErrorf(ws, "crop_shape", "Crop shape can't be negative. Got %v", st.crop)
		case st.end[d] < st.start[d]:
			return a.ArgDataErrorf(ws, "roi_start", "the ROI ends before it starts in dimension %d: [%d, %d)", d, st.start[d], st.end[d])
		case len(st.shape) > 0 && (st.start[d] < 0 || st.end[d] > st.shape[d]):
			return a.ArgDataErrorf(ws, "roi_start", "ROI can't be out of bounds. Dimension %d: ROI [%d, %d), input extent %d", d, st.start[d], st.end[d], st.shape[d])
		case len(st.shape) > 0 && st.crop[d] > st.shape[d]:
			return a.ArgDataErrorf(ws, "crop_shape", "Cropping shape can't be bigger than the input shape. Dimension %d: crop %d, input extent %d", d, st.crop[d], st.shape[d])
		}
	}
	return nil
}

func (o *roiCropOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*roiState)
	if err := o.read(ws, st); err != nil {
		return err
	}
	ws.Out[0].SetShape(len(st.crop))
	return nil
}

func (o *roiCropOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*roiState)
	for d, c := range st.crop {
		lo, hi := st.start[d], st.end[d]-c // the window inside the ROI
		if c >= st.end[d]-st.start[d] {
			lo, hi = st.end[d]-c, st.start[d] // the window around the ROI
		}
		if len(st.shape) > 0 {
			lo, hi = max(lo, 0), min(hi, st.shape[d]-c)
		}
		engine.WriteScalar(ws.Out[0].Data[8*d:], engine.Int64, float64(lo+ws.RNG.Intn(hi-lo+1)))
	}
	return nil
}
