package image

import (
	"math"
	"strconv"

	"github.com/godali/godali/engine"
)

// multi_paste reads other samples of the batch (in_ids), so it is a host-batch operator
// (engine.HostBatchOperator): the executor calls RunHostBatch once every sample of its
// inputs is ready.

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "multi_paste",
		Doc: "Pastes regions of several HWC images into each output, in order (later pastes cover earlier ones), " +
			"on a canvas of zeros. With in_ids (one input), output i receives samples in_ids[i][0], in_ids[i][1], ... " +
			"of the batch; without it, output i receives sample i of every input, in input order. A region is " +
			"shapes (default: from the anchor to the end of the source) at in_anchors of the source, pasted at " +
			"out_anchors of the output; each may instead be given relative (*_rel: fractions of the source's, " +
			"or the output's, size, rounded down). The anchors and shapes have one row per paste and one column per " +
			"spatial dimension (H, W). The output is output_size (H, W, or H, W, C with the input's C) with the input's " +
			"channels; without it every " +
			"input sample must have one shape, which the output takes. dtype converts (with saturation).",
		MinInputs: 1, MaxInputs: 64, Outputs: []string{"images"}, HostOnly: true,
		InputLayouts: []string{"HWC"},
		Args: []engine.ArgSpec{
			{Name: "in_ids", Type: engine.ArgIntList, TensorInput: true, Doc: "per output sample: the samples of the batch to paste, in order (needs exactly one input)"},
			{Name: "in_anchors", Type: engine.ArgIntList, TensorInput: true, Doc: "[pastes, 2] top-left corners of the source regions (default: zeros)"},
			{Name: "in_anchors_rel", Type: engine.ArgFloatList, TensorInput: true, Doc: "in_anchors as fractions of the source's size"},
			{Name: "shapes", Type: engine.ArgIntList, TensorInput: true, Doc: "[pastes, 2] sizes of the regions (default: to the end of the source)"},
			{Name: "shapes_rel", Type: engine.ArgFloatList, TensorInput: true, Doc: "shapes as fractions of the source's size"},
			{Name: "out_anchors", Type: engine.ArgIntList, TensorInput: true, Doc: "[pastes, 2] where the regions go in the output (default: zeros)"},
			{Name: "out_anchors_rel", Type: engine.ArgFloatList, TensorInput: true, Doc: "out_anchors as fractions of the output's size"},
			{Name: "output_size", Type: engine.ArgIntList, TensorInput: true, Doc: "the output's (H, W) or (H, W, C); default: the inputs' common shape"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type (default: the input's)"},
		},
	})
	engine.RegisterBackend("multi_paste", "cpu", func(a *engine.Args) (engine.Operator, error) {
		for _, pair := range [][2]string{{"in_anchors", "in_anchors_rel"}, {"shapes", "shapes_rel"}, {"out_anchors", "out_anchors_rel"}} {
			if a.Given(pair[0]) && a.Given(pair[1]) {
				return nil, a.Errorf(pair[1], "give %s or %s, not both", pair[0], pair[1])
			}
		}
		o := &multiPaste{args: a}
		if a.Given("dtype") {
			o.dtype = a.DType("dtype")
		}
		if a.GivenConstant("output_size") && !a.AnyPerSample("output_size") {
			sz := a.Ints("output_size")
			if (len(sz) != 2 && len(sz) != 3) || sz[0] < 0 || sz[1] < 0 {
				return nil, a.Errorf("output_size", "expected (height, width) or (height, width, channels), got %v", sz)
			}
		}
		return o, nil
	})
}

type multiPaste struct {
	args  *engine.Args
	dtype engine.DType // engine.DTypeInvalid: the input's
}

func (o *multiPaste) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	a := o.args
	if a.Given("in_ids") && len(in) != 1 {
		return nil, a.Invalidf("with in_ids the operator takes exactly one input, got %d", len(in))
	}
	for k, m := range in[1:] {
		if err := engine.CheckInput(a, k+1, m, []string{"HWC"}, []engine.DType{in[0].DType}); err != nil {
			return nil, err
		}
	}
	if in[0].DType.Size() == 0 {
		return nil, a.Invalidf("input 0 must be numeric, got %s", in[0].DType)
	}
	out := engine.TensorMeta{DType: in[0].DType, Layout: in[0].Layout, Shape: []int{-1, -1, in[0].Shape[2]}}
	if o.dtype != engine.DTypeInvalid {
		out.DType = o.dtype
	}
	if a.GivenConstant("output_size") && !a.AnyPerSample("output_size") {
		sz := a.Ints("output_size")
		out.Shape[0], out.Shape[1] = int(sz[0]), int(sz[1])
	}
	return []engine.TensorMeta{out}, nil
}

// Setup and Run are not used: the executor calls RunHostBatch.
func (o *multiPaste) Setup(*engine.Workspace) error { return nil }
func (o *multiPaste) Run(*engine.Workspace) error   { return nil }

// region is one paste: a source tensor, its window, and where it goes.
type region struct {
	src            *engine.Tensor
	srcName        string // "sample 3" or "input 1"
	in, size, dest [2]int
}

func (o *multiPaste) RunHostBatch(hw *engine.HostBatchWorkspace) error {
	a := o.args
	var ids []int
	var fbuf []float64
	for i := 0; i < hw.Size; i++ {
		ws := hw.SampleWorkspace(i)
		var err error
		var srcs []*engine.Tensor
		var names []string
		if a.Given("in_ids") {
			if ids, err = a.IntsAt(ws, "in_ids", ids); err != nil {
				return err
			}
			for _, id := range ids {
				if id < 0 || id >= hw.Size {
					return a.ArgDataErrorf(ws, "in_ids", "sample index %d out of range [0, %d) (the batch's size)", id, hw.Size)
				}
				srcs = append(srcs, hw.In[0][id])
				names = append(names, "sample "+strconv.Itoa(id))
			}
		} else {
			for k := range hw.In {
				srcs = append(srcs, hw.In[k][i])
				names = append(names, "input "+strconv.Itoa(k))
			}
		}
		first := hw.In[0][i]
		channels := first.Shape[2]
		var outHW [2]int
		if a.Given("output_size") {
			sz, err := a.IntsAt(ws, "output_size", nil)
			if err != nil {
				return err
			}
			if (len(sz) != 2 && len(sz) != 3) || sz[0] < 0 || sz[1] < 0 || (len(sz) == 3 && sz[2] != channels) {
				return a.ArgDataErrorf(ws, "output_size", "expected (height, width) or (height, width, %d channels), got %v", channels, sz)
			}
			outHW = [2]int{sz[0], sz[1]}
		} else {
			outHW = [2]int{first.Shape[0], first.Shape[1]}
			for k := range hw.In {
				for j := 0; j < hw.Size; j++ {
					s := hw.In[k][j].Shape
					if s[0] != outHW[0] || s[1] != outHW[1] || s[2] != channels {
						return a.DataErrorf(ws, "the input samples differ in shape (%v and %v): give output_size", first.Shape, s)
					}
				}
			}
		}
		regions := make([]region, len(srcs))
		for j, s := range srcs {
			if s.Shape[2] != channels {
				return a.DataErrorf(ws, "%s has %d channels, the output %d", names[j], s.Shape[2], channels)
			}
			regions[j] = region{src: s, srcName: names[j]}
		}
		if err := o.coords(ws, regions, "in_anchors", func(r *region) [2]int { return [2]int{r.src.Shape[0], r.src.Shape[1]} },
			func(r *region, v [2]int) { r.in = v }, &fbuf); err != nil {
			return err
		}
		for j := range regions { // default shape: from the anchor to the end
			r := &regions[j]
			r.size = [2]int{r.src.Shape[0] - r.in[0], r.src.Shape[1] - r.in[1]}
		}
		if err := o.coords(ws, regions, "shapes", func(r *region) [2]int { return [2]int{r.src.Shape[0], r.src.Shape[1]} },
			func(r *region, v [2]int) { r.size = v }, &fbuf); err != nil {
			return err
		}
		if err := o.coords(ws, regions, "out_anchors", func(*region) [2]int { return outHW },
			func(r *region, v [2]int) { r.dest = v }, &fbuf); err != nil {
			return err
		}
		dt := first.DType
		if o.dtype != engine.DTypeInvalid {
			dt = o.dtype
		}
		data, err := hw.Output(0, i, dt, []int{outHW[0], outHW[1], channels})
		if err != nil {
			return err
		}
		clear(data)
		for j := range regions {
			r := &regions[j]
			for d := 0; d < 2; d++ {
				if r.in[d] < 0 || r.size[d] < 0 || r.dest[d] < 0 || r.in[d]+r.size[d] > r.src.Shape[d] || r.dest[d]+r.size[d] > outHW[d] {
					return a.DataErrorf(ws, "paste %d (from %s of shape %v): region at %v of size %v, pasted at %v, does not fit in the source or in the output of size %v",
						j, r.srcName, r.src.Shape, r.in, r.size, r.dest, outHW)
				}
			}
			pasteRegion(data, dt, outHW[1], channels, r)
		}
	}
	return nil
}

// coords reads one of the [pastes, 2] arguments (name, or name_rel as fractions of
// extent) into every region; absent, the regions keep their defaults.
func (o *multiPaste) coords(ws *engine.Workspace, rs []region, name string, extent func(*region) [2]int, set func(*region, [2]int), fbuf *[]float64) error {
	a := o.args
	rel := name + "_rel"
	if name == "shapes" {
		rel = "shapes_rel"
	}
	var arg string
	switch {
	case a.Given(name):
		arg = name
	case a.Given(rel):
		arg = rel
	default:
		return nil
	}
	v, err := a.FloatsAt(ws, arg, *fbuf)
	if err != nil {
		return err
	}
	*fbuf = v
	if len(v) != 2*len(rs) {
		return a.ArgDataErrorf(ws, arg, "expected %d values (%d pastes x 2 dimensions), got %d", 2*len(rs), len(rs), len(v))
	}
	for j := range rs {
		var c [2]int
		for d := 0; d < 2; d++ {
			x := v[2*j+d]
			if arg == rel {
				x = math.Floor(x * float64(extent(&rs[j])[d]))
			}
			if math.IsNaN(x) || math.Abs(x) > 1<<30 {
				return a.ArgDataErrorf(ws, arg, "value %v out of range", v[2*j+d])
			}
			c[d] = int(x)
		}
		set(&rs[j], c)
	}
	return nil
}

// pasteRegion copies r's window into the HWC output (width w, c channels) of type dt.
func pasteRegion(out []byte, dt engine.DType, w, c int, r *region) {
	src := r.src
	ssz, osz := src.DType.Size(), dt.Size()
	sw := src.Shape[1]
	rowElems := r.size[1] * c
	for y := 0; y < r.size[0]; y++ {
		si := ((r.in[0]+y)*sw + r.in[1]) * c
		oi := ((r.dest[0]+y)*w + r.dest[1]) * c
		if src.DType == dt {
			copy(out[oi*osz:(oi+rowElems)*osz], src.Data[si*ssz:(si+rowElems)*ssz])
			continue
		}
		for k := 0; k < rowElems; k++ {
			v := engine.ReadScalar(src.Data[(si+k)*ssz:], src.DType)
			engine.WriteScalarSat(out[(oi+k)*osz:], dt, v)
		}
	}
}
