package tensor

import (
	"github.com/godali/godali/engine"
)

// maxLookupKey is the largest key lookup_table accepts (DALI's table holds 0x10000 keys).
const maxLookupKey = 0xffff

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "lookup_table",
		Doc: "Maps each integer element through a table (DALI's fn.lookup_table): keys[i] maps " +
			"to values[i] (the last occurrence of a repeated key wins); any other element, " +
			"negative or out of the table, maps to default_value. Values convert to dtype.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "keys", Type: engine.ArgIntList, Default: []int64{}, Doc: "the table's keys, 0 to 65535"},
			{Name: "values", Type: engine.ArgFloatList, Default: []float64{}, Doc: "the value of each key"},
			{Name: "default_value", Type: engine.ArgFloat, Default: 0.0, Doc: "the value of elements that are not keys"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "the output type"},
		},
	})
	engine.RegisterBackend("lookup_table", "cpu", newLookupTable)
}

type lookupTableOp struct {
	args  *engine.Args
	dtype engine.DType
	table []byte // len(keys) entries of dtype, index = key
	def   [8]byte
	n     int
}

func newLookupTable(a *engine.Args) (engine.Operator, error) {
	keys, vals := a.Ints("keys"), a.Floats("values")
	if len(keys) != len(vals) {
		return nil, a.Errorf("values", "needs one value per key (%d), got %d", len(keys), len(vals))
	}
	o := &lookupTableOp{args: a, dtype: a.DType("dtype")}
	sz := o.dtype.Size()
	engine.WriteScalarSat(o.def[:], o.dtype, a.Float("default_value"))
	for _, k := range keys {
		if k < 0 || k > maxLookupKey {
			return nil, a.Errorf("keys", "must be in [0, %d], got %d", maxLookupKey, k)
		}
		o.n = max(o.n, int(k)+1)
	}
	o.table = make([]byte, o.n*sz)
	for i := 0; i < o.n; i++ {
		copy(o.table[i*sz:], o.def[:sz])
	}
	for i, k := range keys {
		engine.WriteScalarSat(o.table[int(k)*sz:], o.dtype, vals[i])
	}
	return o, nil
}

func (o *lookupTableOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if d := in[0].DType; d != engine.DTypeInvalid && !isInt(d) && d != engine.Bool {
		return nil, o.args.Invalidf("the input must be integers, got %s", d)
	}
	m := in[0]
	m.DType = o.dtype
	if m.Shape != nil {
		m.Shape = append([]int{}, m.Shape...)
	}
	return []engine.TensorMeta{m}, nil
}

func (o *lookupTableOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	if !isInt(in.DType) && in.DType != engine.Bool {
		return o.args.DataErrorf(ws, "the input must be integers, got %s", in.DType)
	}
	out.DType, out.Layout = o.dtype, in.Layout
	out.SetShape(in.Shape...)
	return nil
}

func (o *lookupTableOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	sz, isz := o.dtype.Size(), in.DType.Size()
	n := len(out.Data) / sz
	for i := 0; i < n; i++ {
		v, _, neg := readInt(in.Data[i*isz:], in.DType)
		src := o.def[:sz]
		if !neg && v >= 0 && v < int64(o.n) {
			src = o.table[int(v)*sz : int(v+1)*sz]
		}
		copy(out.Data[i*sz:(i+1)*sz], src)
	}
	return nil
}
