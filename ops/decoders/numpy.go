package decoders

import (
	"bytes"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/npy"
	"github.com/godali/godali/ops/internal/npydtype"
)

// decoders.numpy reads .npy files through formats/npy, as readers.numpy does, and maps
// numpy's types the same way (ops/internal/npydtype).
func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.numpy",
		Doc: "Decodes NumPy arrays from serialized .npy files (DALI's fn.decoders.numpy): each " +
			"input sample is the bytes of one file (1-D uint8, e.g. from readers.file or " +
			"external_source); the output is its array, in C order and the machine's byte order, " +
			"with its own type and shape. Without dtype the type is known only when the " +
			"pipeline runs (as a python_function's output).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		InputDtypes: []engine.DType{engine.UInt8},
		Args: []engine.ArgSpec{
			{Name: "dtype", Type: engine.ArgDType, Doc: "the arrays' type, when known: the output's type is then known at build, and a file of another type is an error naming it"},
			{Name: "layout", Type: engine.ArgString, Default: "", Doc: "the output's layout (as many letters as the arrays have dimensions)"},
		},
	})
	engine.RegisterBackend("decoders.numpy", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &npyDecoder{args: a}, nil
	})
}

type npyDecoder struct{ args *engine.Args }

type npyDecoderState struct {
	h   npy.Header
	buf []byte
}

func (o *npyDecoder) NewWorkerState() any { return &npyDecoderState{} }

func (o *npyDecoder) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if s := in[0].Shape; s != nil && len(s) != 1 {
		return nil, o.args.Invalidf("input 0 must be 1-D bytes of .npy files, got %d dimensions", len(s))
	}
	m := engine.TensorMeta{DType: engine.DTypeInvalid, Layout: o.args.String("layout")}
	if o.args.Given("dtype") {
		m.DType = o.args.DType("dtype")
		if l := m.Layout; l != "" {
			m.Shape = make([]int, len(l))
			for i := range m.Shape {
				m.Shape[i] = -1
			}
		}
	}
	return []engine.TensorMeta{m}, nil
}

func (o *npyDecoder) Setup(ws *engine.Workspace) error {
	st := ws.State.(*npyDecoderState)
	data := ws.In[0].Data
	h, err := npy.ParseHeader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	dt, err := npydtype.Of(h.DType)
	if err == nil {
		err = engine.CheckNDim("the array", len(h.Shape))
	}
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if o.args.Given("dtype") && dt != o.args.DType("dtype") {
		return o.args.DataErrorf(ws, "the array is %s, dtype says %s", dt, o.args.DType("dtype"))
	}
	l := o.args.String("layout")
	if l != "" && len(l) != len(h.Shape) {
		return o.args.ArgDataErrorf(ws, "layout", "%q has %d letters, the array has %d dimensions", l, len(l), len(h.Shape))
	}
	st.h = h
	out := ws.Out[0]
	out.DType, out.Layout = dt, l
	out.Shape = out.Shape[:0]
	for _, d := range h.Shape {
		out.Shape = append(out.Shape, int(d))
	}
	return nil
}

func (o *npyDecoder) Run(ws *engine.Workspace) error {
	st := ws.State.(*npyDecoderState)
	data, out := ws.In[0].Data, ws.Out[0]
	h := st.h
	item := h.DType.Size
	raw := data[h.DataOffset : h.DataOffset+h.DataSize] // ParseHeader checked the file holds it
	if !h.Fortran {
		copy(out.Data, raw)
		if h.DType.BigEndian {
			npy.SwapBytes(out.Data[:len(raw)], item)
		}
		return nil
	}
	st.buf = append(st.buf[:0], raw...)
	if h.DType.BigEndian {
		npy.SwapBytes(st.buf, item)
	}
	if err := npy.FortranToC(out.Data[:len(raw)], st.buf, h.Shape, item); err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	return nil
}
