package bbox

import (
	"strings"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "coord_flip",
		Doc: "Flips coordinates (float32 [N, D], D = 1, 2 or 3) about a center: a flipped coordinate c becomes " +
			"2 * center - c (with the default center 0.5, coordinates relative to the image: 1 - c). layout names " +
			"the columns with x, y and z.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"coords"}, HostOnly: true,
		InputDtypes: []engine.DType{engine.Float32}, InputDoc: "points or boxes, one per row",
		Args: []engine.ArgSpec{
			{Name: "layout", Type: engine.ArgString, Default: "", Doc: "order of the coordinates: a permutation of x, y, z (default: x, xy or xyz by the number of columns)"},
			{Name: "flip_x", Type: engine.ArgInt, Default: 1, TensorInput: true, Doc: "flip the x coordinate when nonzero"},
			{Name: "flip_y", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip the y coordinate when nonzero"},
			{Name: "flip_z", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip the z coordinate when nonzero"},
			{Name: "center_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "center of the flip along x"},
			{Name: "center_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "center of the flip along y"},
			{Name: "center_z", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "center of the flip along z"},
		},
	})
	engine.RegisterBackend("coord_flip", "cpu", func(a *engine.Args) (engine.Operator, error) {
		l := a.String("layout")
		if len(l) > 3 {
			return nil, a.Errorf("layout", "expected up to 3 of the letters x, y, z, got %q", l)
		}
		for i, c := range l {
			if !strings.ContainsRune("xyz", c) || strings.ContainsRune(l[:i], c) {
				return nil, a.Errorf("layout", "expected distinct letters among x, y, z, got %q", l)
			}
		}
		return &coordFlipOp{args: a, layout: l}, nil
	})
}

type coordFlipOp struct {
	args   *engine.Args
	layout string
}

func (o *coordFlipOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if len(m.Shape) != 2 {
		return nil, o.args.Invalidf("input 0 must be float32 coordinates [N, D], got %s %v", m.DType, m.Shape)
	}
	if d := m.Shape[1]; d > 3 || d == 0 || (o.layout != "" && d >= 0 && d != len(o.layout)) {
		return nil, o.args.Invalidf("input 0 has %d coordinates per row; expected 1 to 3, as many as layout %q names", d, o.layout)
	}
	return []engine.TensorMeta{m}, nil
}

func (o *coordFlipOp) Setup(ws *engine.Workspace) error {
	t := ws.In[0]
	if len(t.Shape) != 2 || (t.Shape[0] > 0 && (t.Shape[1] < 1 || t.Shape[1] > 3)) ||
		(o.layout != "" && t.Shape[0] > 0 && t.Shape[1] != len(o.layout)) {
		return o.args.DataErrorf(ws, "expected coordinates [N, D] with D = 1 to 3 (layout %q), got %v", o.layout, t.Shape)
	}
	ws.Out[0].SetShape(t.Shape...)
	return nil
}

var axisArgs = map[rune][2]string{'x': {"flip_x", "center_x"}, 'y': {"flip_y", "center_y"}, 'z': {"flip_z", "center_z"}}

func (o *coordFlipOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	copy(out.Data, in.Data)
	n, d := in.Shape[0], in.Shape[1]
	layout := o.layout
	if layout == "" {
		layout = "xyz"[:d]
	}
	for col, axis := range layout {
		names := axisArgs[axis]
		flip, err := o.args.BoolAt(ws, names[0])
		if err != nil {
			return err
		}
		if !flip {
			continue
		}
		c, err := o.args.FloatAt(ws, names[1])
		if err != nil {
			return err
		}
		twice := float32(2 * c)
		for i := 0; i < n; i++ {
			putF32(out.Data, i*d+col, twice-f32(in.Data, i*d+col))
		}
	}
	return nil
}
