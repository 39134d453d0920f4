package random

import (
	"math"
	"slices"
	"sort"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "segmentation.random_object_bbox",
		Doc: "Picks a random object of a labelled segmentation map (1 to 6 dimensions, integer labels) and gives its " +
			"bounding box. With probability foreground_prob it draws a class (uniformly among the foreground classes " +
			"present, or by class_weights), finds the connected blobs of that label (elements adjacent along an axis; " +
			"diagonal neighbours are not connected), keeps those at least threshold long on every axis (a class with " +
			"none is dropped and another drawn) and, of the k_largest by volume when given, draws one uniformly; with " +
			"ignore_class, every blob of every class is equally likely. Otherwise, or when no blob qualifies, the box is " +
			"the whole input and the class the background. format: \"anchor_shape\" (outputs anchor and shape), " +
			"\"start_end\" (start and one-past-end) or \"box\" (one output: start then end); int32, one value per " +
			"dimension. output_class adds the box's label (int32 scalar).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"anchor", "shape", "label"}, HostOnly: true,
		OutputIf: map[string]engine.OutputCond{"shape": engine.IfArgNot("format", "box"), "label": engine.IfArg("output_class")},
		InputDoc: "an integer label map",
		Args: []engine.ArgSpec{
			{Name: "format", Type: engine.ArgString, Default: "anchor_shape", Doc: "\"anchor_shape\", \"start_end\" or \"box\""},
			{Name: "foreground_prob", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "probability of drawing an object rather than the whole input"},
			{Name: "classes", Type: engine.ArgIntList, TensorInput: true, Doc: "the foreground labels (default: every label present other than background)"},
			{Name: "background", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "the background label (default 0, or, when classes holds 0, one less than the smallest class)"},
			{Name: "class_weights", Type: engine.ArgFloatList, TensorInput: true, Doc: "relative probabilities of the classes (without classes: of labels 0, 1, ... skipping background)"},
			{Name: "k_largest", Type: engine.ArgInt, Doc: "draw among the k largest blobs (by box volume) only"},
			{Name: "threshold", Type: engine.ArgIntList, TensorInput: true, Doc: "per-axis minimum size of the boxes drawn (one value: every axis)"},
			{Name: "ignore_class", Type: engine.ArgBool, Default: false, Doc: "every blob equally likely, whatever its class (exclusive with classes, class_weights, output_class)"},
			{Name: "output_class", Type: engine.ArgBool, Default: false, Doc: "add an output with the box's label (the background for the whole input)"},
			{Name: "cache_objects", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; godali finds the blobs every time"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "as in DALI, operators given the same seed draw the same numbers (-1: a stream of their own); with the pipeline seed"},
		},
	})
	engine.RegisterBackend("segmentation.random_object_bbox", "cpu", func(a *engine.Args) (engine.Operator, error) {
		switch f := a.String("format"); f {
		case "anchor_shape", "start_end", "box":
		default:
			return nil, a.Errorf("format", "expected \"anchor_shape\", \"start_end\" or \"box\", got %q", f)
		}
		if a.Bool("ignore_class") {
			for _, n := range []string{"classes", "class_weights"} {
				if a.Given(n) {
					return nil, a.Errorf(n, "ignore_class draws among all the blobs: give ignore_class or %s, not both", n)
				}
			}
			if a.Bool("output_class") {
				return nil, a.Errorf("output_class", "ignore_class draws among all the blobs: give ignore_class or output_class, not both")
			}
		}
		k := -1
		if a.Given("k_largest") {
			if k = a.Int("k_largest"); k < 1 {
				return nil, a.Errorf("k_largest", "must be at least 1, got %d", k)
			}
		}
		if p := a.Float("foreground_prob"); !a.AnyPerSample("foreground_prob") && !(p >= 0 && p <= 1) {
			return nil, a.Errorf("foreground_prob", "must be in [0, 1], got %g", p)
		}
		return &objectBBoxOp{args: a, format: a.String("format"), kLargest: k,
			ignoreClass: a.Bool("ignore_class"), outputClass: a.Bool("output_class")}, nil
	})
}

type objectBBoxOp struct {
	args        *engine.Args
	format      string
	kLargest    int // -1: all
	ignoreClass bool
	outputClass bool
}

// objectBBoxState is a worker's scratch: the labels, the union-find forest, the blobs.
type objectBBoxState struct {
	labels  []int64
	parent  []int32
	blobOf  []int32
	boxes   []blobBox
	classes []int
	weights []float64
	thresh  []int
	coords  []int
}

// blobBox is one blob's bounding box: [lo, hi) per dimension.
type blobBox struct {
	lo, hi [6]int
	vol    int64
	label  int64
}

func (o *objectBBoxOp) NewWorkerState() any { return &objectBBoxState{} }

func (o *objectBBoxOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	switch m.DType {
	case engine.Bool, engine.UInt8, engine.Int8, engine.UInt16, engine.Int16, engine.UInt32, engine.Int32, engine.Int64, engine.UInt64:
	default:
		return nil, o.args.Invalidf("input 0 must be an integer label map, got %s", m.DType)
	}
	if m.Shape != nil && (len(m.Shape) < 1 || len(m.Shape) > 6) {
		return nil, o.args.Invalidf("input 0 has %d dimensions; must be 1 to 6", len(m.Shape))
	}
	if m.Shape == nil {
		return nil, o.args.Invalidf("input 0 must have a known number of dimensions (1 to 6)")
	}
	nd := len(m.Shape)
	box := engine.TensorMeta{DType: engine.Int32, Shape: []int{nd}}
	var out []engine.TensorMeta
	if o.format == "box" {
		out = append(out, engine.TensorMeta{DType: engine.Int32, Shape: []int{2 * nd}})
	} else {
		out = append(out, box, box)
	}
	if o.outputClass {
		out = append(out, engine.TensorMeta{DType: engine.Int32, Shape: []int{}})
	}
	return out, nil
}

func (o *objectBBoxOp) Setup(ws *engine.Workspace) error {
	nd := len(ws.In[0].Shape)
	k := 0
	if o.format == "box" {
		ws.Out[0].SetShape(2 * nd)
		k = 1
	} else {
		ws.Out[0].SetShape(nd)
		ws.Out[1].SetShape(nd)
		k = 2
	}
	if o.outputClass {
		ws.Out[k].SetShape()
	}
	return nil
}

func (o *objectBBoxOp) Run(ws *engine.Workspace) error {
	a := o.args
	st := ws.State.(*objectBBoxState)
	in := ws.In[0]
	shape := in.Shape
	nd := len(shape)
	n := 1
	for _, d := range shape {
		n *= d
	}
	st.labels = slices.Grow(st.labels[:0], n)[:n]
	sz := in.DType.Size()
	for i := range st.labels {
		st.labels[i] = int64(engine.ReadScalar(in.Data[i*sz:], in.DType))
	}
	bg, err := o.classInfo(ws, st)
	if err != nil {
		return err
	}
	var thresh []int
	if a.Given("threshold") {
		if thresh, err = a.IntsAt(ws, "threshold", st.thresh); err != nil {
			return err
		}
		if len(thresh) == 1 && nd > 1 { // one value for every axis
			for len(thresh) < nd {
				thresh = append(thresh, thresh[0])
			}
		}
		st.thresh = thresh
		if len(thresh) != nd {
			return a.ArgDataErrorf(ws, "threshold", "expected 1 or %d values (one per dimension of the input of shape %v), got %d", nd, shape, len(thresh))
		}
	}
	p, err := a.FloatAt(ws, "foreground_prob")
	if err != nil {
		return err
	}
	var chosen *blobBox
	if n > 0 && ws.RNG.Float64() < p {
		chosen = o.pick(ws, st, shape, bg, thresh)
	}
	start := make([]int, nd)
	end := make([]int, nd)
	label := bg
	if chosen != nil {
		copy(start, chosen.lo[:nd])
		copy(end, chosen.hi[:nd])
		label = chosen.label
	} else {
		copy(end, shape)
	}
	put := func(t *engine.Tensor, k int, v int) { engine.WriteScalar(t.Data[4*k:], engine.Int32, float64(v)) }
	switch o.format {
	case "box":
		for d := 0; d < nd; d++ {
			put(ws.Out[0], d, start[d])
			put(ws.Out[0], nd+d, end[d])
		}
	case "start_end":
		for d := 0; d < nd; d++ {
			put(ws.Out[0], d, start[d])
			put(ws.Out[1], d, end[d])
		}
	default:
		for d := 0; d < nd; d++ {
			put(ws.Out[0], d, start[d])
			put(ws.Out[1], d, end[d]-start[d])
		}
	}
	if o.outputClass {
		put(ws.Out[len(ws.Out)-1], 0, int(label))
	}
	return nil
}

// classInfo fills st.classes and st.weights (the candidate foreground classes) and
// returns the background label.
func (o *objectBBoxOp) classInfo(ws *engine.Workspace, st *objectBBoxState) (int64, error) {
	a := o.args
	bg := int64(0)
	explicitBG := a.Given("background")
	if explicitBG {
		v, err := a.IntAt(ws, "background")
		if err != nil {
			return 0, err
		}
		bg = int64(v)
	}
	st.classes, st.weights = st.classes[:0], st.weights[:0]
	if o.ignoreClass {
		return bg, nil
	}
	if a.Given("classes") {
		cls, err := a.IntsAt(ws, "classes", st.classes)
		if err != nil {
			return 0, err
		}
		st.classes = cls
		if len(cls) > 0 && slices.Contains(cls, int(bg)) {
			if explicitBG {
				return 0, a.ArgDataErrorf(ws, "classes", "class label %d is the background label; give another background or remove it from classes", bg)
			}
			bg = int64(slices.Min(cls)) - 1
		}
	}
	if a.Given("class_weights") {
		w, err := a.FloatsAt(ws, "class_weights", st.weights)
		if err != nil {
			return 0, err
		}
		st.weights = w
		for _, x := range w {
			if !(x >= 0) || math.IsInf(x, 0) {
				return 0, a.ArgDataErrorf(ws, "class_weights", "weights must be finite and non-negative, got %v", w)
			}
		}
		if a.Given("classes") {
			if len(w) != len(st.classes) {
				return 0, a.ArgDataErrorf(ws, "class_weights", "has %d values but classes %d; they must match", len(w), len(st.classes))
			}
		} else {
			cls := 0
			for range w { // labels 0, 1, ... skipping the background
				if int64(cls) == bg {
					cls++
				}
				st.classes = append(st.classes, cls)
				cls++
			}
		}
	} else if a.Given("classes") {
		for range st.classes {
			st.weights = append(st.weights, 1)
		}
	}
	if !a.Given("classes") && !a.Given("class_weights") {
		// Every label present other than the background, in increasing order.
		seen := map[int64]bool{}
		for _, v := range st.labels {
			if v != bg && !seen[v] {
				seen[v] = true
				st.classes = append(st.classes, int(v))
			}
		}
		sort.Ints(st.classes)
		for range st.classes {
			st.weights = append(st.weights, 1)
		}
	}
	return bg, nil
}

// pick draws the blob; nil when none qualifies.
func (o *objectBBoxOp) pick(ws *engine.Workspace, st *objectBBoxState, shape []int, bg int64, thresh []int) *blobBox {
	if o.ignoreClass {
		o.blobs(st, shape, func(v int64) bool { return v != bg })
		return o.pickBox(ws, st, thresh)
	}
	classes := append([]int(nil), st.classes...)
	weights := append([]float64(nil), st.weights...)
	for {
		total := 0.0
		for _, w := range weights {
			total += w
		}
		if len(classes) == 0 || total <= 0 {
			return nil
		}
		r := ws.RNG.Float64() * total
		k := 0
		for k < len(classes)-1 && (r >= weights[k] || weights[k] == 0) {
			r -= weights[k]
			k++
		}
		cls := int64(classes[k])
		o.blobs(st, shape, func(v int64) bool { return v == cls })
		if b := o.pickBox(ws, st, thresh); b != nil {
			return b
		}
		classes = append(classes[:k], classes[k+1:]...) // no qualifying blob: draw another class
		weights = append(weights[:k], weights[k+1:]...)
	}
}

// pickBox drops the boxes under the threshold and draws one (of the k largest).
func (o *objectBBoxOp) pickBox(ws *engine.Workspace, st *objectBBoxState, thresh []int) *blobBox {
	boxes := st.boxes[:0]
	for _, b := range st.boxes {
		ok := true
		for d, t := range thresh {
			if b.hi[d]-b.lo[d] < t {
				ok = false
			}
		}
		if ok {
			boxes = append(boxes, b)
		}
	}
	st.boxes = boxes
	n := len(boxes)
	if n == 0 {
		return nil
	}
	if o.kLargest > 0 && o.kLargest < n {
		sort.SliceStable(boxes, func(i, j int) bool { return boxes[i].vol > boxes[j].vol })
		n = o.kLargest
	}
	return &boxes[ws.RNG.Intn(n)]
}

// blobs labels the connected blobs of the elements in (neighbours along an axis with the
// same label are connected) and fills st.boxes, in raster order of their first element.
func (o *objectBBoxOp) blobs(st *objectBBoxState, shape []int, in func(int64) bool) {
	n := len(st.labels)
	nd := len(shape)
	st.parent = slices.Grow(st.parent[:0], n)[:n]
	var strides [6]int
	s := 1
	for d := nd - 1; d >= 0; d-- {
		strides[d] = s
		s *= shape[d]
	}
	find := func(i int32) int32 {
		for st.parent[i] != i {
			st.parent[i] = st.parent[st.parent[i]]
			i = st.parent[i]
		}
		return i
	}
	for i := range st.parent {
		st.parent[i] = int32(i)
	}
	st.coords = slices.Grow(st.coords[:0], nd)[:nd]
	c := st.coords
	clear(c)
	for i := 0; i < n; i++ {
		v := st.labels[i]
		if in(v) {
			for d := 0; d < nd; d++ {
				if c[d] > 0 {
					j := i - strides[d]
					if st.labels[j] == v {
						a, b := find(int32(i)), find(int32(j))
						if a != b {
							if a < b {
								st.parent[b] = a
							} else {
								st.parent[a] = b
							}
						}
					}
				}
			}
		}
		for d := nd - 1; d >= 0; d-- { // next coordinates, last dimension fastest
			if c[d]++; c[d] < shape[d] {
				break
			}
			c[d] = 0
		}
	}
	st.blobOf = slices.Grow(st.blobOf[:0], n)[:n]
	st.boxes = st.boxes[:0]
	clear(c)
	for i := 0; i < n; i++ {
		v := st.labels[i]
		if in(v) {
			r := find(int32(i))
			var k int32
			if r == int32(i) {
				k = int32(len(st.boxes))
				var b blobBox
				for d := 0; d < nd; d++ {
					b.lo[d], b.hi[d] = c[d], c[d]+1
				}
				b.label = v
				st.boxes = append(st.boxes, b)
			} else {
				k = st.blobOf[r]
			}
			st.blobOf[i] = k
			b := &st.boxes[k]
			for d := 0; d < nd; d++ {
				b.lo[d] = min(b.lo[d], c[d])
				b.hi[d] = max(b.hi[d], c[d]+1)
			}
		}
		for d := nd - 1; d >= 0; d-- {
			if c[d]++; c[d] < shape[d] {
				break
			}
			c[d] = 0
		}
	}
	for k := range st.boxes {
		b := &st.boxes[k]
		b.vol = 1
		for d := 0; d < nd; d++ {
			b.vol *= int64(b.hi[d] - b.lo[d])
		}
	}
}
