package tensor

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "cast",
		Doc: "Converts each element to dtype, saturating as DALI does: floats converted to integers " +
			"round to nearest (halves away from zero) and clamp to the type's range (NaN gives 0); " +
			"integers clamp to the target range; BOOL is 1 for any nonzero value.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "dtype", Type: engine.ArgDType, Required: true, Doc: "output type"},
		},
	})
	engine.RegisterBackend("cast", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &castOp{args: a, dtype: a.DType("dtype")}, nil
	})
}

type castOp struct {
	args  *engine.Args
	dtype engine.DType
}

func (o *castOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	m.DType = o.dtype
	if m.Shape != nil {
		m.Shape = append([]int{}, m.Shape...)
	}
	return []engine.TensorMeta{m}, nil
}

// TakesDynamicInputs: cast reads its input's type per sample, so it may follow a
// python_function (whose output type is known only when it runs).
func (o *castOp) TakesDynamicInputs() bool { return true }

func (o *castOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	out.DType = o.dtype
	out.Layout = in.Layout
	out.SetShape(in.Shape...)
	return nil
}

func isInt(d engine.DType) bool { return d.IsSigned() || (d.IsUnsigned() && d != engine.Bool) }

func intRange(d engine.DType) (lo, hi int64, uhi uint64) {
	switch d {
	case engine.Int8:
		return math.MinInt8, math.MaxInt8, math.MaxInt8
	case engine.Int16:
		return math.MinInt16, math.MaxInt16, math.MaxInt16
	case engine.Int32:
		return math.MinInt32, math.MaxInt32, math.MaxInt32
	case engine.Int64:
		return math.MinInt64, math.MaxInt64, math.MaxInt64
	case engine.UInt8:
		return 0, math.MaxUint8, math.MaxUint8
	case engine.UInt16:
		return 0, math.MaxUint16, math.MaxUint16
	case engine.UInt32:
		return 0, math.MaxUint32, math.MaxUint32
	}
	return 0, math.MaxInt64, math.MaxUint64
}

func readInt(b []byte, d engine.DType) (v int64, big uint64, neg bool) {
	var u uint64
	for k := 0; k < d.Size(); k++ {
		u |= uint64(b[k]) << (8 * k)
	}
	if d.IsSigned() {
		shift := 64 - 8*d.Size()
		v = int64(u<<shift) >> shift
		return v, uint64(v), v < 0
	}
	return int64(u), u, false
}

func writeInt(b []byte, d engine.DType, u uint64) {
	for k := 0; k < d.Size(); k++ {
		b[k] = byte(u >> (8 * k))
	}
}

func (o *castOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	to := out.DType // o.dtype, or the second input's type for cast_like
	si, so := in.DType.Size(), to.Size()
	for i := 0; i < n; i++ {
		src, dst := in.Data[i*si:], out.Data[i*so:]
		switch {
		case to == engine.Bool:
			dst[0] = 0
			if engine.ReadScalar(src, in.DType) != 0 {
				dst[0] = 1
			}
		case (isInt(in.DType) || in.DType == engine.Bool) && isInt(to):
			// Exact integer path: 64-bit values do not survive a float64.
			v, u, neg := readInt(src, in.DType)
			lo, hi, uhi := intRange(to)
			switch {
			case neg && to.IsUnsigned():
				writeInt(dst, to, 0)
			case neg:
				writeInt(dst, to, uint64(max(v, lo)))
			case to.IsUnsigned():
				writeInt(dst, to, min(u, uhi))
			default:
				writeInt(dst, to, uint64(min(u, uint64(hi))))
			}
		default:
			engine.WriteScalarSat(dst, to, engine.ReadScalar(src, in.DType))
		}
	}
	return nil
}
