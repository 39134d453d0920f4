package math

import (
	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "constant",
		Doc: "Produces the same tensor for every sample (DALI's Constant; types.Constant with a list, " +
			"an array or a shape creates it). Values come from fdata (floats) or idata (integers), " +
			"converted to dtype; a single value fills the whole shape.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"value"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "fdata", Type: engine.ArgFloatList, Doc: "the values, as floats (row-major)"},
			{Name: "idata", Type: engine.ArgIntList, Doc: "the values, as integers (row-major)"},
			{Name: "shape", Type: engine.ArgIntList, Doc: "the shape of each sample (default: one dimension holding the values; [] for a scalar)"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "element type (default FLOAT for fdata, INT32 for idata)"},
			{Name: "layout", Type: engine.ArgString, Default: "", Doc: "layout of the output"},
		},
	})
	engine.RegisterBackend("constant", "cpu", newConstant)
}

type constantOp struct {
	data   []byte
	shape  []int
	dtype  engine.DType
	layout string
}

func newConstant(a *engine.Args) (engine.Operator, error) {
	if a.Given("fdata") == a.Given("idata") {
		return nil, a.Errorf("fdata", "give exactly one of fdata and idata")
	}
	var vals []float64
	var ivals []int64
	dtype := engine.Float32
	if a.Given("idata") {
		ivals = a.Ints("idata")
		dtype = engine.Int32
	} else {
		vals = a.Floats("fdata")
	}
	// No value: an empty constant (DALI's np.int32([]) as a pipeline output), of shape [0]
	// unless shape says another shape of no element.
	n := max(len(vals), len(ivals))
	if a.Given("dtype") {
		dtype = a.DType("dtype")
	}
	shape := []int{n}
	if a.GivenConstant("shape") {
		shape = shape[:0]
		for _, d := range a.Ints("shape") {
			if d < 0 || d > 1<<31 {
				return nil, a.Errorf("shape", "dimensions must be in [0, 2^31], got %v", a.Ints("shape"))
			}
			shape = append(shape, int(d))
		}
	}
	total := 1
	for _, d := range shape {
		total *= d
		if total > 1<<28 {
			return nil, a.Errorf("shape", "%v is too large for a constant", shape)
		}
	}
	if n == 0 && total != 0 {
		return nil, a.Errorf("fdata", "needs at least one value (none fits only a shape with no elements)")
	}
	if n != 1 && n != total {
		if n == 0 {
			return nil, a.Errorf("fdata", "needs at least one value for shape %v", shape)
		}
		return nil, a.Errorf("shape", "%v holds %d values, got %d", shape, total, n)
	}
	lay := a.String("layout")
	if lay != "" && len(lay) != len(shape) {
		return nil, a.Errorf("layout", "%q does not match the %d dimensions of shape %v", lay, len(shape), shape)
	}
	sz := dtype.Size()
	data := make([]byte, total*sz)
	for i := 0; i < total; i++ {
		k := i
		if n == 1 {
			k = 0
		}
		if ivals != nil {
			writeInt(data[i*sz:], dtype, ivals[k])
		} else {
			engine.WriteScalarSat(data[i*sz:], dtype, vals[k]) // integers: rounded, saturated
		}
	}
	return &constantOp{data: data, shape: shape, dtype: dtype, layout: lay}, nil
}

// writeInt stores an integer exactly (int64 values beyond 2^53 do not survive float64).
func writeInt(b []byte, d engine.DType, v int64) {
	switch d {
	case engine.Int64:
		for k := 0; k < 8; k++ {
			b[k] = byte(uint64(v) >> (8 * k))
		}
	case engine.UInt64:
		v = max(v, 0) // saturated, as DALI converts (ConvertSat)
		for k := 0; k < 8; k++ {
			b[k] = byte(uint64(v) >> (8 * k))
		}
	default:
		if d.IsFloat() {
			engine.WriteScalar(b, d, float64(v))
			return
		}
		// Narrower integers saturate, as DALI's constant converts (idata=-1 as UINT8 is
		// 0); values this narrow are exact in float64.
		engine.WriteScalarSat(b, d, float64(v))
	}
}

func (o *constantOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{{DType: o.dtype, Layout: o.layout, Shape: append([]int{}, o.shape...)}}, nil
}

func (o *constantOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(o.shape...)
	return nil
}

func (o *constantOp) Run(ws *engine.Workspace) error {
	copy(ws.Out[0].Data, o.data)
	return nil
}
