package bbox

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "segmentation.select_masks",
		Doc: "Selects masks given as polygons (as readers.coco gives them): from mask ids sel_ids (int32 [K]), " +
			"polygons (int32 [N, 3] rows mask_id, start_vertex, end_vertex) and vertices ([V, D], any type), outputs the " +
			"polygons of the selected masks, in sel_ids order, and only their vertices, with the vertex ranges " +
			"renumbered; with reindex_masks the mask ids become their index in sel_ids.",
		MinInputs: 3, MaxInputs: 3, Outputs: []string{"polygons", "vertices"}, HostOnly: true,
		InputDtypes: []engine.DType{engine.Int32}, InputDoc: "sel_ids: the mask ids to keep",
		Args: []engine.ArgSpec{
			{Name: "reindex_masks", Type: engine.ArgBool, Default: false, Doc: "renumber the selected masks 0, 1, ... in sel_ids order"},
		},
	})
	engine.RegisterBackend("segmentation.select_masks", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &selectMasksOp{args: a, reindex: a.Bool("reindex_masks")}, nil
	})
}

type selectMasksOp struct {
	args    *engine.Args
	reindex bool
}

// polygon is one row of the polygons input.
type polygon struct{ mask, start, end int }

type selectState struct {
	polys []polygon // selected, in output order
	nvert int
}

func (o *selectMasksOp) NewWorkerState() any { return &selectState{} }

func (o *selectMasksOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if len(in[0].Shape) != 1 {
		return nil, o.args.Invalidf("input 0 (sel_ids) must be int32 [K], got %s %v", in[0].DType, in[0].Shape)
	}
	if p := in[1]; p.DType != engine.Int32 || len(p.Shape) != 2 {
		return nil, o.args.Invalidf("input 1 (polygons) must be int32 [N, 3], got %s %v", p.DType, p.Shape)
	}
	if v := in[2]; len(v.Shape) != 2 || v.DType.Size() == 0 {
		return nil, o.args.Invalidf("input 2 (vertices) must be [V, D], got %s %v", v.DType, v.Shape)
	}
	return []engine.TensorMeta{
		{DType: engine.Int32, Layout: in[1].Layout, Shape: []int{-1, 3}},
		{DType: in[2].DType, Layout: in[2].Layout, Shape: []int{-1, in[2].Shape[1]}},
	}, nil
}

func i32(b []byte, i int) int {
	return int(int32(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24))
}

func (o *selectMasksOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*selectState)
	ids, polys, verts := ws.In[0], ws.In[1], ws.In[2]
	if len(polys.Shape) != 2 || polys.Shape[1] != 3 {
		cols := 0
		if len(polys.Shape) == 2 {
			cols = polys.Shape[1]
		}
		return o.args.DataErrorf(ws, "``polygons`` is expected to contain 2D tensors with 3 columns: ``mask_id, start_idx, end_idx``. Got %d columns.", cols)
	}
	nv := verts.Shape[0]
	st.polys, st.nvert = st.polys[:0], 0
	for k := 0; k < ids.Shape[0]; k++ {
		id := i32(ids.Data, k)
		found := false
		for r := 0; r < polys.Shape[0]; r++ {
			p := polygon{i32(polys.Data, 3*r), i32(polys.Data, 3*r+1), i32(polys.Data, 3*r+2)}
			if p.mask != id {
				continue
			}
			if p.start < 0 || p.end < p.start || p.end > nv {
				return o.args.DataErrorf(ws, "Vertex index range for mask id %d is out of bounds. Expected to be within the range of available vertices [0, %d), got [%d, %d).", id, nv, p.start, p.end)
			}
			found = true
			st.polys = append(st.polys, p)
			st.nvert += p.end - p.start
		}
		if !found {
			return o.args.DataErrorf(ws, "Selected mask_id %d is not present in the input.", id)
		}
	}
	ws.Out[0].SetShape(len(st.polys), 3)
	ws.Out[1].SetShape(st.nvert, verts.Shape[1])
	return nil
}

func (o *selectMasksOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*selectState)
	ids, verts := ws.In[0], ws.In[2]
	row := verts.Shape[1] * verts.DType.Size()
	out, next, k, lastMask := 0, 0, -1, 0
	for _, p := range st.polys {
		mask := p.mask
		if o.reindex {
			// Polygons come grouped by selected id, in sel_ids order.
			if k < 0 || p.mask != lastMask {
				k++
				for i32(ids.Data, k) != p.mask {
					k++
				}
			}
			lastMask = p.mask
			mask = k
		}
		n := p.end - p.start
		for c, v := range [3]int{mask, next, next + n} {
			engine.WriteScalar(ws.Out[0].Data[4*(3*out+c):], engine.Int32, float64(v))
		}
		copy(ws.Out[1].Data[next*row:], verts.Data[p.start*row:p.end*row])
		next += n
		out++
	}
	return nil
}
