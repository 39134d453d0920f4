package decoders

import (
	"github.com/godali/godali/codec/lz4"
	"github.com/godali/godali/engine"
)

// inflateMaxBytes bounds a sample's inflated size: shape (times the chunks) sets the
// allocation before any byte is decoded.
const inflateMaxBytes = 1 << 30

// lz4MaxRatio is the most an LZ4 block expands: a byte of a 255-run length extension
// stands for 255 bytes of output.
const lz4MaxRatio = 255

func init() {
	// DALI 2.4 names the operator decoders.inflate; experimental.inflate is its former name.
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.inflate",
		Doc: "Decompresses LZ4 blocks (the LZ4 block format, as DALI's fn.decoders.inflate; DALI has it on " +
			"the GPU only). Input: a 1-D UINT8 sample, one compressed chunk, or several (chunk_offsets " +
			"and/or chunk_sizes) that each inflate to shape; then the output has the chunks as its " +
			"outermost extent (named sequence_axis_name when layout is given). The inflated bytes are " +
			"the output's elements (dtype), little-endian; a chunk must inflate to exactly shape's size.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		InputDtypes: []engine.DType{engine.UInt8}, InputDoc: "compressed bytes, e.g. from readers.numpy or an external source",
		Args: []engine.ArgSpec{
			{Name: "shape", Type: engine.ArgIntList, Required: true, TensorInput: true, Doc: "shape of one inflated chunk (at most 2^30 bytes a sample); may come per sample"},
			{Name: "dtype", Type: engine.ArgDType, Default: "UINT8", Doc: "type of the inflated elements"},
			{Name: "layout", Type: engine.ArgString, Default: "", Doc: "layout of one inflated chunk"},
			{Name: "sequence_axis_name", Type: engine.ArgString, Default: "F", Doc: "name of the chunks' axis (with layout and chunks)"},
			{Name: "chunk_offsets", Type: engine.ArgIntList, TensorInput: true, Doc: "where the chunks begin in the sample (without chunk_sizes: packed, the last ends with the sample)"},
			{Name: "chunk_sizes", Type: engine.ArgIntList, TensorInput: true, Doc: "the chunks' compressed sizes (without chunk_offsets: packed from the sample's start)"},
			{Name: "algorithm", Type: engine.ArgString, Default: "LZ4", Doc: "LZ4 (the only one)"},
			{Name: "check_output_size", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility: the size of every chunk is always checked"},
		},
	})
	engine.RegisterBackend("decoders.inflate", "cpu", newInflate)
	engine.RegisterVariant("experimental.inflate", "decoders.inflate", "DALI's former name of decoders.inflate. ")
}

type inflateOp struct {
	args   *engine.Args
	dtype  engine.DType
	layout string
	chunks bool
}

func newInflate(a *engine.Args) (engine.Operator, error) {
	if alg := a.String("algorithm"); alg != "LZ4" && alg != "lz4" {
		return nil, a.Errorf("algorithm", "unknown algorithm %q: only LZ4 is supported", alg)
	}
	o := &inflateOp{args: a, dtype: a.DType("dtype"), layout: a.String("layout"),
		chunks: a.Given("chunk_offsets") || a.Given("chunk_sizes")}
	if o.dtype.Size() == 0 {
		return nil, a.Errorf("dtype", "expected a numeric type, got %s", o.dtype)
	}
	if n := len(a.String("sequence_axis_name")); o.chunks && o.layout != "" && n != 1 {
		return nil, a.Errorf("sequence_axis_name", "expected one character, got %q", a.String("sequence_axis_name"))
	}
	return o, nil
}

func (o *inflateOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if m := in[0]; m.Shape != nil && len(m.Shape) != 1 {
		return nil, o.args.Invalidf("input must be 1-D compressed bytes, got %v", m.Shape)
	}
	out := engine.TensorMeta{DType: o.dtype, Layout: o.layout}
	if o.chunks && o.layout != "" {
		out.Layout = o.args.String("sequence_axis_name") + o.layout
	}
	if !o.args.AnyPerSample("shape") {
		sh := o.args.Ints("shape")
		vol := int64(o.dtype.Size())
		for _, d := range sh {
			if d < 0 || d > inflateMaxBytes || vol*d > inflateMaxBytes {
				return nil, o.args.Errorf("shape", "%v of %s: expected extents >= 0 and at most 2^30 bytes a chunk", sh, o.dtype)
			}
			vol *= d
			out.Shape = append(out.Shape, int(d))
		}
		if o.chunks {
			out.Shape = append([]int{-1}, out.Shape...)
		}
		if o.layout != "" && len(o.layout) != len(sh) {
			return nil, o.args.Errorf("layout", "%q has %d axes, shape %v has %d", o.layout, len(o.layout), sh, len(sh))
		}
	}
	return []engine.TensorMeta{out}, nil
}

type inflateState struct {
	shape, offsets, sizes []int
}

func (o *inflateOp) NewWorkerState() any { return &inflateState{} }

// chunkSpans resolves the sample's chunks ([offset, offset+size) each) from the
// arguments, checked against the sample's n bytes.
func (o *inflateOp) chunkSpans(ws *engine.Workspace, st *inflateState, n int) error {
	a := o.args
	st.offsets, st.sizes = st.offsets[:0], st.sizes[:0]
	if !o.chunks {
		st.offsets, st.sizes = append(st.offsets, 0), append(st.sizes, n)
		return nil
	}
	var err error
	hasOff, hasSize := a.Given("chunk_offsets"), a.Given("chunk_sizes")
	if hasOff {
		if st.offsets, err = a.IntsAt(ws, "chunk_offsets", st.offsets); err != nil {
			return err
		}
	}
	if hasSize {
		if st.sizes, err = a.IntsAt(ws, "chunk_sizes", st.sizes); err != nil {
			return err
		}
	}
	switch {
	case !hasSize:
		for i, off := range st.offsets {
			end := n
			if i+1 < len(st.offsets) {
				end = st.offsets[i+1]
			}
			st.sizes = append(st.sizes, end-off)
		}
	case !hasOff:
		off := 0
		for _, s := range st.sizes {
			st.offsets = append(st.offsets, off)
			off += max(s, 0)
		}
	case len(st.offsets) != len(st.sizes):
		return a.ArgDataErrorf(ws, "chunk_sizes", "%d chunk sizes for %d chunk offsets", len(st.sizes), len(st.offsets))
	}
	for i := range st.offsets {
		if off, s := st.offsets[i], st.sizes[i]; off < 0 || s < 0 || off > n || s > n-off {
			return a.DataErrorf(ws, "chunk %d (offset %d, size %d) lies outside the %d-byte sample", i, off, s, n)
		}
	}
	return nil
}

func (o *inflateOp) Setup(ws *engine.Workspace) error {
	a := o.args
	st := ws.State.(*inflateState)
	in := ws.In[0]
	if len(in.Shape) != 1 {
		return a.DataErrorf(ws, "input must be 1-D compressed bytes, got shape %v", in.Shape)
	}
	sh, err := a.IntsAt(ws, "shape", st.shape)
	if err != nil {
		return err
	}
	st.shape = sh
	vol := o.dtype.Size()
	for _, d := range sh {
		if d < 0 || d > inflateMaxBytes {
			return a.ArgDataErrorf(ws, "shape", "expected extents from 0 to 2^30, got %v", sh)
		}
		vol *= d
		if vol > inflateMaxBytes {
			return a.ArgDataErrorf(ws, "shape", "%v of %s is more than 2^30 bytes", sh, o.dtype)
		}
	}
	if o.layout != "" && len(o.layout) != len(sh) {
		return a.ArgDataErrorf(ws, "shape", "%v has %d axes, layout %q %d", sh, len(sh), o.layout, len(o.layout))
	}
	if err := o.chunkSpans(ws, st, in.Shape[0]); err != nil {
		return err
	}
	nc := len(st.offsets)
	if nc*vol > inflateMaxBytes {
		return a.ArgDataErrorf(ws, "shape", "%d chunks of %v %s make more than 2^30 bytes", nc, sh, o.dtype)
	}
	for i, s := range st.sizes {
		if vol > lz4MaxRatio*s+16 {
			return a.DataErrorf(ws, "chunk %d: %d compressed bytes cannot inflate to shape %v of %s (%d bytes; LZ4 expands at most %d times)", i, s, sh, o.dtype, vol, lz4MaxRatio)
		}
	}
	out := ws.Out[0]
	if o.chunks {
		out.Shape = append(append(out.Shape[:0], nc), sh...)
		if o.layout != "" {
			out.Layout = a.String("sequence_axis_name") + o.layout
		}
	} else {
		out.SetShape(sh...)
		out.Layout = o.layout
	}
	return nil
}

func (o *inflateOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*inflateState)
	in, out := ws.In[0], ws.Out[0]
	vol := out.NumBytes() / max(len(st.offsets), 1) // bytes of one inflated chunk
	for i, off := range st.offsets {
		dst := out.Data[i*vol : (i+1)*vol]
		n, err := lz4.DecodeBlock(dst, in.Data[off:off+st.sizes[i]])
		if err == lz4.ErrTooLong {
			return o.args.DataErrorf(ws, "chunk %d (offset %d, %d bytes) inflates to more than the %d bytes of shape %v of %s", i, off, st.sizes[i], vol, st.shape, o.dtype)
		}
		if err != nil {
			return o.args.DataErrorf(ws, "chunk %d (offset %d, %d bytes): not an LZ4 block: %v", i, off, st.sizes[i], err)
		}
		if n != vol {
			return o.args.DataErrorf(ws, "chunk %d (offset %d, %d bytes) inflates to %d bytes; shape %v of %s needs %d", i, off, st.sizes[i], n, st.shape, o.dtype, vol)
		}
	}
	return nil
}
