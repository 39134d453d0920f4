package image

import (
	"fmt"
	"math"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// maxLaplacianWindow bounds window_size and smoothing_size (binomial weights of larger
// windows lose float precision).
const maxLaplacianWindow = 31

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "laplacian",
		Doc: "Computes the Laplacian of the input, as DALI's laplacian: the sum over the spatial " +
			"axes of second derivatives, each a separable convolution with a second-derivative " +
			"window (window_size) along its axis and binomial smoothing windows (smoothing_size, " +
			"default window_size; 1 = none) along the others (OpenCV's getDerivKernels windows), " +
			"borders reflected (101). The spatial axes are the layout's except a leading F and/or C " +
			"and a trailing C (every axis when there is no layout): 1 to 3 of them. Any numeric " +
			"type; the output is the input's type (rounded, saturated) or dtype=FLOAT.",
		Sequences: engine.Sequences{PerFrame: true, ChannelFrames: true}, Volumetric: true,
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "window_size", Type: engine.ArgIntList, Default: []int64{3}, TensorInput: true, Doc: "size of the derivative window (odd, 3 or more): one value or one per spatial axis; may come per sample"},
			{Name: "smoothing_size", Type: engine.ArgIntList, TensorInput: true, Doc: "size of the smoothing windows (odd, 1 or more): one value or one per spatial axis; default window_size"},
			{Name: "scale", Type: engine.ArgFloatList, Default: []float64{1.0}, TensorInput: true, Doc: "factor of each partial derivative: one value or one per spatial axis"},
			{Name: "normalized_kernel", Type: engine.ArgBool, Default: false, Doc: "scale each partial derivative by 2^-(sum of its windows' sizes - 1 - 2 * spatial axes); excludes scale"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: the input's (default) or FLOAT"},
		},
	})
	engine.RegisterBackend("laplacian", "cpu", func(a *engine.Args) (engine.Operator, error) { return newLaplacian(a) })
}

type laplacianOp struct {
	args *engine.Args
	out  engine.DType // 0: the input's
}

type laplacianState struct {
	wins, smooth, scales []float64
	ws, ss               []int
	in, a, b, acc        []float64
	shape                []int
	deriv                [maxLaplacianWindow + 1][]float64 // by size, made on first use
	binom                [maxLaplacianWindow + 1][]float64
}

func newLaplacian(a *engine.Args) (*laplacianOp, error) {
	o := &laplacianOp{args: a}
	if a.Given("dtype") {
		o.out = a.DType("dtype")
	}
	if a.Bool("normalized_kernel") && a.Given("scale") {
		return nil, a.Errorf("normalized_kernel", "Parameter ``scale`` cannot be specified when ``normalized_kernel`` is set to True")
	}
	for _, n := range []string{"window_size", "smoothing_size"} {
		if a.AnyPerSample(n) || !a.GivenConstant(n) {
			continue
		}
		if err := checkLaplacianWindows(a.Ints(n), n); err != "" {
			return nil, a.Errorf(n, "%s", err)
		}
	}
	return o, nil
}

func checkLaplacianWindows[T int | int64](v []T, name string) string {
	lo, what := 3, "Window size"
	if name == "smoothing_size" {
		lo, what = 1, "Smoothing window size"
	}
	for _, n := range v {
		if n := int(n); n < lo || n%2 == 0 || n > maxLaplacianWindow {
			return fmt.Sprintf("%s must be an odd integer between %d and %d, got %d", what, lo, maxLaplacianWindow, n)
		}
	}
	return ""
}

// spatialAxes are the axes the laplacian differentiates: all but a leading F and/or C and
// a trailing C of the layout, every axis without one; msg says why a layout is refused
// (DALI's messages).
func spatialAxes(layout string, ndim int) (axes []int, msg string) {
	first, last := 0, ndim
	if layout != "" && len(layout) == ndim {
		for first < last && (layout[first] == 'F' || layout[first] == 'C') {
			first++
		}
		lead := layout[:first]
		if first > 2 || strings.Count(lead, "F") > 1 || strings.Count(lead, "C") > 1 ||
			(strings.Contains(lead, "C") && layout[last-1] == 'C' && last-1 >= first) {
			return nil, fmt.Sprintf("Found more the one occurrence of 'F' or 'C' axes in layout: %s.", layout)
		}
		if last > first && layout[last-1] == 'C' {
			last--
		}
		rest := layout[first:last]
		if strings.Contains(rest, "C") {
			return nil, fmt.Sprintf("Only channel-first or channel-last layouts are supported, got: %s.", layout)
		}
		if strings.Contains(rest, "F") {
			return nil, fmt.Sprintf("For sequences, layout should begin with 'F' or 'C', got: %s.", layout)
		}
	}
	if last <= first {
		return nil, fmt.Sprintf("No spatial axes found in the layout %q", layout)
	}
	if last-first > 3 {
		return nil, fmt.Sprintf("Too many dimensions, found: %d data axes, maximum supported is: 3.", last-first)
	}
	for i := first; i < last; i++ {
		axes = append(axes, i)
	}
	return axes, ""
}

func (o *laplacianOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 || m.DType == engine.Bool {
		return nil, o.args.Invalidf("input must be a numeric tensor of known rank, got %s %v", m.DType, m.Shape)
	}
	axes, msg := spatialAxes(m.Layout, len(m.Shape))
	if msg != "" {
		return nil, o.args.Invalidf("input %s %v: %s", m.Layout, m.Shape, msg)
	}
	for _, n := range []string{"window_size", "smoothing_size", "scale"} {
		if o.args.AnyPerSample(n) || !o.args.GivenConstant(n) {
			continue
		}
		k := len(o.args.Ints(n))
		if n == "scale" {
			k = len(o.args.Floats(n))
		}
		if k != 1 && k != len(axes) {
			return nil, o.args.Errorf(n, "Argument %q expects either a single value or a list of %d elements. %d given.", n, len(axes), k)
		}
	}
	out := m
	if o.out != 0 {
		if o.out != m.DType && o.out != engine.Float32 {
			return nil, o.args.Errorf("dtype", "Output data type must be same as input, FLOAT or skipped (input %s, got %s)", m.DType, o.out)
		}
		out.DType = o.out
	}
	return []engine.TensorMeta{out}, nil
}

func (o *laplacianOp) NewWorkerState() any { return &laplacianState{} }

func (o *laplacianOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	ws.Out[0].Layout = ws.In[0].Layout
	return nil
}

// perAxis reads a one-or-per-axis integer argument for this sample.
func (o *laplacianOp) perAxis(ws *engine.Workspace, name string, nd int, buf []int) ([]int, error) {
	v, err := o.args.IntsAt(ws, name, buf)
	if err != nil {
		return nil, err
	}
	if len(v) == 1 {
		for len(v) < nd {
			v = append(v, v[0])
		}
	}
	if len(v) != nd {
		return nil, o.args.ArgDataErrorf(ws, name, "Argument %s for sample %d is expected to have 1 or %d elements, got: %d", name, ws.Sample, nd, len(v))
	}
	if msg := checkLaplacianWindows(v, name); msg != "" {
		return nil, o.args.ArgDataErrorf(ws, name, "%s", msg)
	}
	return v, nil
}

func (o *laplacianOp) Run(ws *engine.Workspace) error {
	a := o.args
	st := ws.State.(*laplacianState)
	in, out := ws.In[0], ws.Out[0]
	axes, msg := spatialAxes(in.Layout, len(in.Shape))
	if msg != "" {
		return a.DataErrorf(ws, "input %s %v: %s", in.Layout, in.Shape, msg)
	}
	nd := len(axes)
	var err error
	if st.ws, err = o.perAxis(ws, "window_size", nd, st.ws); err != nil {
		return err
	}
	if a.Given("smoothing_size") {
		if st.ss, err = o.perAxis(ws, "smoothing_size", nd, st.ss); err != nil {
			return err
		}
	} else {
		st.ss = append(st.ss[:0], st.ws...)
	}
	scales, err := a.FloatsAt(ws, "scale", st.scales)
	if err != nil {
		return err
	}
	st.scales = scales
	if len(scales) == 1 {
		for len(scales) < nd {
			scales = append(scales, scales[0])
		}
	}
	if len(scales) != nd {
		return a.ArgDataErrorf(ws, "scale", "Argument scale for sample %d is expected to have 1 or %d elements, got: %d", ws.Sample, nd, len(scales))
	}
	if a.Bool("normalized_kernel") {
		for i := range scales {
			e := st.ws[i] - 3
			for j := range axes {
				if j != i {
					e += st.ss[j] - 1
				}
			}
			scales[i] = math.Ldexp(1, -e)
		}
	}
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	if n == 0 {
		return nil
	}
	if err := st.compute(out.Data, out.DType, in.Data, in.DType, in.Shape, axes, scales, laplacianTileElems); err != nil {
		return a.DataErrorf(ws, "%v", err)
	}
	return nil
}

// laplacianTileElems is about how many elements one tile of a sample holds: compute
// converts, filters and accumulates a tile of rows of the first spatial axis at a time
// (with the rows its windows read around it), so a worker's float64 buffers are a few
// tiles long whatever the sample's size (a 5240x5240 RGB photograph took four
// whole-sample float64 copies, 2.6 GB, before).
const laplacianTileElems = 1 << 18

// compute writes the laplacian of in (element type dt, the given shape, spatial axes
// axes: consecutive, the ones before them planes computed one by one) to out (element
// type odt), st.ws / st.ss / scales per spatial axis. The sample is processed in tiles
// of rows along axes[0] of about tileElems elements each (at least 8 halos deep): each
// tile gathers its rows and the halo rows its windows read (reflected at the ends, as
// imaging.BorderReflect101 reads them), filters along the other spatial axes, then
// along axes[0] keeping the tile's rows only. Every output element is the same sum, in
// the same order, of the same values as filtering the whole sample, so the result does
// not depend on tileElems.
func (st *laplacianState) compute(out []byte, odt engine.DType, in []byte, dt engine.DType, shape, axes []int, scales []float64, tileElems int) error {
	nd := len(axes)
	t := axes[0]
	planes, inner := 1, 1
	for _, d := range shape[:t] {
		planes *= d
	}
	for _, d := range shape[t+1:] {
		inner *= d
	}
	rowsT := shape[t]
	halo := st.ws[0] / 2
	if nd > 1 {
		halo = max(halo, st.ss[0]/2)
	}
	tile := min(max(tileElems/max(inner, 1), 8*halo, 1), rowsT)
	sub := append(st.shape[:0], shape[t:]...)
	st.shape = sub
	slabN := (tile + 2*halo) * inner
	st.in, st.a, st.b, st.acc = growF64(st.in, slabN), growF64(st.a, slabN), growF64(st.b, slabN), growF64(st.acc, tile*inner)
	isz, osz := dt.Size(), odt.Size()
	for p := 0; p < planes; p++ {
		src0 := in[p*rowsT*inner*isz:]
		dst0 := out[p*rowsT*inner*osz:]
		for r0 := 0; r0 < rowsT; r0 += tile {
			rows := min(tile, rowsT-r0)
			ext := rows + 2*halo
			sub[0] = ext
			slab := st.in[:ext*inner]
			for e := 0; e < ext; e++ {
				j := imaging.BorderIndex(r0-halo+e, rowsT, imaging.BorderReflect101)
				row, from := slab[e*inner:(e+1)*inner], src0[j*inner*isz:]
				for k := range row {
					row[k] = engine.ReadScalar(from[k*isz:], dt)
				}
			}
			acc := st.acc[:rows*inner]
			clear(acc)
			for i := range axes {
				src := slab
				alongT := false
				for j := nd - 1; j >= 0; j-- {
					var win []float64
					if j == i {
						win = st.derivWindow(st.ws[i])
					} else {
						win = st.binomWindow(st.ss[j])
					}
					if len(win) == 1 && win[0] == 1 {
						continue
					}
					dst := st.a
					if &src[0] == &st.a[0] {
						dst = st.b
					}
					first, outN := 0, sub[axes[j]-t]
					if j == 0 { // along axes[0]: the tile's rows, reading the halo
						first, outN, alongT = halo, rows, true
					}
					if err := imaging.ConvAxis(dst, src, sub, axes[j]-t, win, len(win)/2, imaging.BorderReflect101, 0, first, outN); err != nil {
						return err
					}
					src = dst
				}
				if !alongT {
					src = src[halo*inner : (halo+rows)*inner]
				}
				s := scales[i]
				for k, v := range src[:rows*inner] {
					acc[k] += s * v
				}
			}
			o := dst0[r0*inner*osz:]
			for k, v := range acc {
				engine.WriteScalarSat(o[k*osz:], odt, v)
			}
		}
	}
	return nil
}

func (st *laplacianState) derivWindow(n int) []float64 {
	if st.deriv[n] == nil {
		st.deriv[n] = make([]float64, n)
		imaging.SecondDerivWindow(st.deriv[n])
	}
	return st.deriv[n]
}

func (st *laplacianState) binomWindow(n int) []float64 {
	if st.binom[n] == nil {
		st.binom[n] = make([]float64, n)
		imaging.SmoothingWindow(st.binom[n])
	}
	return st.binom[n]
}
