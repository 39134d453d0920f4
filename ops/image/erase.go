package image

import (
	"math"
	"strings"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "erase",
		Doc: "Erases (fills with fill_value) one or more rectangular regions of each sample, as DALI " +
			"does: anchor and shape list the regions' starts and extents along axes, region after " +
			"region; regions are clipped to the sample. Normalized coordinates are fractions of the " +
			"extent (rounded to the nearest index, halves up); centered_anchor makes anchor the region's center.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"},
		Args: []engine.ArgSpec{
			{Name: "anchor", Type: engine.ArgFloatList, TensorInput: true, Doc: "region starts, len(axes) values per region (may come per sample)"},
			{Name: "shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "region extents, len(axes) values per region (may come per sample)"},
			{Name: "axes", Type: engine.ArgIntList, Doc: "axes the coordinates refer to, in order; exclusive with axis_names"},
			{Name: "axis_names", Type: engine.ArgString, Default: "HW", Doc: "axes the coordinates refer to, as layout letters"},
			{Name: "fill_value", Type: engine.ArgFloatList, Default: []float64{0}, TensorInput: true, Doc: "one value, or one per channel (the layout's C axis); may come per sample"},
			{Name: "normalized_anchor", Type: engine.ArgBool, Default: false, Doc: "anchor in fractions of the extent"},
			{Name: "normalized_shape", Type: engine.ArgBool, Default: false, Doc: "shape in fractions of the extent"},
			{Name: "normalized", Type: engine.ArgBool, Default: false, Doc: "sets normalized_anchor and normalized_shape"},
			{Name: "centered_anchor", Type: engine.ArgBool, Default: false, Doc: "anchor is the center of the region"},
		},
	})
	engine.RegisterBackend("erase", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o := &eraseOp{args: a,
			normAnchor: a.Bool("normalized_anchor") || a.Bool("normalized"),
			normShape:  a.Bool("normalized_shape") || a.Bool("normalized"),
			centered:   a.Bool("centered_anchor")}
		if !a.Given("shape") {
			return nil, a.Errorf("shape", "required: the extents of the regions to erase")
		}
		if a.GivenConstant("normalized") && (a.GivenConstant("normalized_anchor") || a.GivenConstant("normalized_shape")) {
			return nil, a.Errorf("normalized", "is incompatible with a separate normalized_anchor or normalized_shape (as in DALI)")
		}
		return o, nil
	})
}

type eraseOp struct {
	args       *engine.Args
	axes       []int
	chanAxis   int
	fill       [][]byte // per channel (or one), in the input's type
	normAnchor bool
	normShape  bool
	centered   bool
}

type eraseState struct {
	anchor, shape []float64
	fillv         []float64 // a per-sample fill_value
	fill          [][]byte  // ... in the input's type
	lo, hi, c     []int     // the region's box and the odometer over it
}

func (o *eraseOp) NewWorkerState() any { return &eraseState{} }

func (o *eraseOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 {
		return nil, o.args.Invalidf("input must be a tensor of known rank and type, got %s %v", m.DType, m.Shape)
	}
	layout := m.Layout
	if layout == "" && len(m.Shape) == 3 {
		layout = "HWC"
	}
	axes, _, err := resolveAxesOrdered(o.args, len(m.Shape), layout, nil)
	if err != nil {
		return nil, err
	}
	if axes == nil { // the default axis_names "HW"
		for _, c := range o.args.String("axis_names") {
			d := strings.IndexRune(layout, c)
			if d < 0 {
				return nil, o.args.Errorf("axis_names", "axis %q is not in the input layout %q", string(c), layout)
			}
			axes = append(axes, d)
		}
	}
	o.axes = axes
	o.chanAxis = strings.IndexRune(layout, 'C')
	o.fill = nil
	if !o.args.AnyPerSample("fill_value") {
		fv := o.args.Floats("fill_value")
		if len(fv) == 0 {
			fv = []float64{0}
		}
		if len(fv) > 1 && (o.chanAxis < 0 || (m.Shape[o.chanAxis] >= 0 && m.Shape[o.chanAxis] != len(fv))) {
			return nil, o.args.Errorf("fill_value", "%d values need a channel axis of that extent; input layout %q shape %v", len(fv), layout, m.Shape)
		}
		o.fill = fillBytes(o.fill, fv, m.DType)
	}
	for _, n := range []string{"anchor", "shape"} {
		if v := o.args.Floats(n); o.args.GivenConstant(n) && len(v)%len(axes) != 0 {
			return nil, o.args.Errorf(n, "needs %d values per region (one per axis), got %d", len(axes), len(v))
		}
	}
	return []engine.TensorMeta{m}, nil
}

// fillBytes converts fill values to the input's type (saturated), reusing dst.
func fillBytes(dst [][]byte, fv []float64, dt engine.DType) [][]byte {
	dst = dst[:0]
	for i, v := range fv {
		var b []byte
		if i < cap(dst) {
			b = dst[:i+1][i]
		}
		if len(b) != dt.Size() {
			b = make([]byte, dt.Size())
		}
		engine.WriteScalarSat(b, dt, v)
		dst = append(dst, b)
	}
	return dst
}

// fillFor is the sample's fill values: the constant, or its per-sample fill_value.
func (o *eraseOp) fillFor(ws *engine.Workspace, st *eraseState) ([][]byte, error) {
	if o.fill != nil {
		return o.fill, nil
	}
	in := ws.In[0]
	var err error
	if st.fillv, err = o.args.FloatsAt(ws, "fill_value", st.fillv); err != nil {
		return nil, err
	}
	if len(st.fillv) == 0 {
		st.fillv = append(st.fillv, 0)
	}
	if len(st.fillv) > 1 && (o.chanAxis < 0 || in.Shape[o.chanAxis] != len(st.fillv)) {
		return nil, o.args.ArgDataErrorf(ws, "fill_value", "%d values need a channel axis of that extent (shape %v)", len(st.fillv), in.Shape)
	}
	st.fill = fillBytes(st.fill, st.fillv, in.DType)
	return st.fill, nil
}

func (o *eraseOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *eraseOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	st := ws.State.(*eraseState)
	copy(out.Data, in.Data)
	k := len(o.axes)
	var err error
	if st.shape, err = o.args.FloatsAt(ws, "shape", st.shape); err != nil {
		return err
	}
	if st.anchor, err = o.args.FloatsAt(ws, "anchor", st.anchor); err != nil {
		return err
	}
	if len(st.shape)%k != 0 || (len(st.anchor) != 0 && len(st.anchor) != len(st.shape)) {
		return o.args.DataErrorf(ws, "anchor (%d values) and shape (%d values) must give %d values per region", len(st.anchor), len(st.shape), k)
	}
	fill, err := o.fillFor(ws, st)
	if err != nil {
		return err
	}
	na, ns := o.normAnchor, o.normShape
	n := len(in.Shape)
	sz := in.DType.Size()
	st.lo, st.hi, st.c = growInts(st.lo, n), growInts(st.hi, n), growInts(st.c, n)
	lo, hi := st.lo, st.hi
	for r := 0; r < len(st.shape)/k; r++ {
		for d := 0; d < n; d++ {
			lo[d], hi[d] = 0, in.Shape[d]
		}
		for j, d := range o.axes {
			ext := float64(in.Shape[d])
			s := st.shape[r*k+j]
			a := 0.0
			if len(st.anchor) > 0 {
				a = st.anchor[r*k+j]
			}
			if ns {
				s *= ext
			}
			if na {
				a *= ext
			}
			if o.centered {
				a -= s / 2
			}
			if math.IsNaN(a) || math.IsNaN(s) || math.IsNaN(a+s) || s < 0 { // -Inf + Inf
				return o.args.DataErrorf(ws, "region %d: anchor %g, shape %g: expected numbers with shape >= 0", r, a, s)
			}
			l, h := math.Round(a), math.Round(a+s)
			lo[d], hi[d] = int(math.Max(0, math.Min(l, ext))), int(math.Max(0, math.Min(h, ext)))
		}
		// fill the box: walk its elements with an odometer over lo..hi
		empty := false
		for d := 0; d < n; d++ {
			empty = empty || lo[d] >= hi[d]
		}
		if empty {
			continue
		}
		c := st.c
		copy(c, lo)
		for {
			off := 0
			for d := 0; d < n; d++ {
				off = off*in.Shape[d] + c[d]
			}
			f := fill[0]
			if len(fill) > 1 {
				f = fill[c[o.chanAxis]]
			}
			copy(out.Data[off*sz:(off+1)*sz], f)
			d := n - 1
			for ; d >= 0; d-- {
				c[d]++
				if c[d] < hi[d] {
					break
				}
				c[d] = lo[d]
			}
			if d < 0 {
				break
			}
		}
	}
	return nil
}

// growInts returns b resized to n, reusing its array when it is large enough.
func growInts(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n)
	}
	return b[:n]
}
