package bbox

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "box_encoder",
		Doc: "Encodes ground-truth boxes (float32 [N, 4], ltrb) and labels (int32 [N]) on a set of anchors, as SSD " +
			"training does: each box takes the anchor it overlaps most (IoU), and each other anchor takes the box it " +
			"overlaps most when that IoU exceeds criteria. Outputs one box per anchor (float32 [A, 4]) and one label " +
			"(int32 [A], 0 for unmatched anchors). Unmatched anchors output themselves. With offset, every output is " +
			"the offset of its box from its anchor in center form: ((x - ax) / aw * scale - mean) / std for the center, " +
			"(log(w / aw) * scale - mean) / std for the size (means, stds per coordinate).",
		MinInputs: 2, MaxInputs: 2, Outputs: []string{"boxes", "labels"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "anchors", Type: engine.ArgFloatList, Required: true, Doc: "the anchors, ltrb, 4 values each, flattened"},
			{Name: "criteria", Type: engine.ArgFloat, Default: 0.5, Doc: "IoU above which an anchor takes a box, in [0, 1]"},
			{Name: "offset", Type: engine.ArgBool, Default: false, Doc: "output offsets from the anchors (center form) instead of boxes"},
			{Name: "scale", Type: engine.ArgFloat, Default: 1.0, Doc: "rescales the offsets before means and stds"},
			{Name: "means", Type: engine.ArgFloatList, Default: []float64{0, 0, 0, 0}, Doc: "subtracted from the offsets (4 values)"},
			{Name: "stds", Type: engine.ArgFloatList, Default: []float64{1, 1, 1, 1}, Doc: "divide the offsets (4 nonzero values)"},
		},
	})
	engine.RegisterBackend("box_encoder", "cpu", newBoxEncoder)
}

type boxEncoderOp struct {
	args        *engine.Args
	anchors     [][4]float64
	criteria    float64
	offset      bool
	scale       float64
	means, stds []float64
}

func newBoxEncoder(a *engine.Args) (engine.Operator, error) {
	o := &boxEncoderOp{args: a, criteria: a.Float("criteria"), offset: a.Bool("offset"), scale: a.Float("scale"),
		means: a.Floats("means"), stds: a.Floats("stds")}
	v := a.Floats("anchors")
	if len(v) == 0 || len(v)%4 != 0 {
		return nil, a.Errorf("anchors", "expected 4 values (ltrb) per anchor, got %d values", len(v))
	}
	for i := 0; i < len(v); i += 4 {
		o.anchors = append(o.anchors, [4]float64{v[i], v[i+1], v[i+2], v[i+3]})
	}
	if !(o.criteria >= 0 && o.criteria <= 1) {
		return nil, a.Errorf("criteria", "must be in [0, 1], got %g", o.criteria)
	}
	if len(o.means) != 4 {
		return nil, a.Errorf("means", "expected 4 values, got %v", o.means)
	}
	if len(o.stds) != 4 {
		return nil, a.Errorf("stds", "expected 4 values, got %v", o.stds)
	}
	for _, s := range o.stds {
		if s == 0 {
			return nil, a.Errorf("stds", "values must be nonzero, got %v", o.stds)
		}
	}
	return o, nil
}

type encoderState struct {
	boxes [][4]float64
	match []int // per anchor: box index or -1
	best  []float64
}

func (o *boxEncoderOp) NewWorkerState() any { return &encoderState{} }

func (o *boxEncoderOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := checkBoxesMeta(o.args, in[0], "boxes (input 0)"); err != nil {
		return nil, err
	}
	if l := in[1]; l.DType != engine.Int32 || len(l.Shape) < 1 || len(l.Shape) > 2 {
		return nil, o.args.Invalidf("labels (input 1) must be int32 [N] or [N, 1], got %s %v", l.DType, l.Shape)
	}
	a := len(o.anchors)
	return []engine.TensorMeta{{DType: engine.Float32, Shape: []int{a, 4}}, {DType: engine.Int32, Shape: []int{a}}}, nil
}

func iou(a, b [4]float64) float64 {
	iw := math.Min(a[2], b[2]) - math.Max(a[0], b[0])
	ih := math.Min(a[3], b[3]) - math.Max(a[1], b[1])
	if iw <= 0 || ih <= 0 {
		return 0
	}
	inter := iw * ih
	union := (a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter
	if union <= 0 {
		return 0
	}
	return inter / union
}

func (o *boxEncoderOp) Setup(ws *engine.Workspace) error {
	n, err := numBoxes(ws.In[0])
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if l := ws.In[1]; len(l.Shape) < 1 || l.Shape[0] != n || (len(l.Shape) == 2 && l.Shape[1] != 1) {
		return o.args.DataErrorf(ws, "labels have shape %v; expected [%d] or [%d, 1] for %d boxes", l.Shape, n, n, n)
	}
	st := ws.State.(*encoderState)
	st.boxes = st.boxes[:0]
	for i := 0; i < n; i++ {
		d := ws.In[0].Data
		st.boxes = append(st.boxes, [4]float64{float64(f32(d, 4*i)), float64(f32(d, 4*i+1)), float64(f32(d, 4*i+2)), float64(f32(d, 4*i+3))})
	}
	a := len(o.anchors)
	st.match, st.best = st.match[:0], st.best[:0]
	for j := 0; j < a; j++ {
		st.match, st.best = append(st.match, -1), append(st.best, 0)
	}
	// Each anchor: its best box, kept when above criteria.
	for j, an := range o.anchors {
		for i, b := range st.boxes {
			if v := iou(b, an); v > st.best[j] {
				st.best[j], st.match[j] = v, i
			}
		}
		if st.best[j] <= o.criteria {
			st.match[j] = -1
		}
	}
	// Each box: its best anchor, whatever the IoU (later boxes win a shared anchor).
	for i, b := range st.boxes {
		bestJ, bestV := -1, -1.0
		for j, an := range o.anchors {
			if v := iou(b, an); v > bestV {
				bestJ, bestV = j, v
			}
		}
		if bestJ >= 0 {
			st.match[bestJ] = i
		}
	}
	ws.Out[0].SetShape(a, 4)
	ws.Out[1].SetShape(a)
	return nil
}

func (o *boxEncoderOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*encoderState)
	labels := ws.In[1]
	for j, an := range o.anchors {
		b, label := an, 0
		if i := st.match[j]; i >= 0 {
			b = st.boxes[i]
			label = int(engine.ReadScalar(labels.Data[4*i:], engine.Int32))
		}
		if o.offset {
			b = o.encode(b, an)
		}
		for k := 0; k < 4; k++ {
			putF32(ws.Out[0].Data, 4*j+k, float32(b[k]))
		}
		engine.WriteScalar(ws.Out[1].Data[4*j:], engine.Int32, float64(label))
	}
	return nil
}

// encode is box b's offset from anchor an, both ltrb, in center form.
func (o *boxEncoderOp) encode(b, an [4]float64) [4]float64 {
	bw, bh := b[2]-b[0], b[3]-b[1]
	aw, ah := an[2]-an[0], an[3]-an[1]
	raw := [4]float64{
		((b[0]+b[2])/2 - (an[0]+an[2])/2) / aw,
		((b[1]+b[3])/2 - (an[1]+an[3])/2) / ah,
		math.Log(bw / aw),
		math.Log(bh / ah),
	}
	for k := range raw {
		raw[k] = (raw[k]*o.scale - o.means[k]) / o.stds[k]
	}
	return raw
}
