package readers

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/caffe"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.caffe2",
		Doc: "Reads a Caffe2 LMDB (path) of caffe2.TensorProtos records, in key order. Outputs, in order: the " +
			"image when image_available (uint8: a STRING proto's bytes, 1-D, or a BYTE proto as [H, W, C]), the " +
			"label unless label_type is 4 (0: one int32/float value, [1]; 1: sparse indices -> a [num_labels] " +
			"0/1 vector; 2: a dense vector; 3: sparse indices with weights in the next proto -> float " +
			"[num_labels]), then additional_inputs tensors (float, int32 or int64, 1-D), then the bbox ([4] int32) " +
			"when bbox is true.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"data", "label", "out2", "out3", "out4", "out5", "out6", "out7"}, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "path", Type: engine.ArgString, Required: true, Doc: "LMDB directory (or its data.mdb)"},
			{Name: "image_available", Type: engine.ArgBool, Default: true, Doc: "the first proto is the image"},
			{Name: "label_type", Type: engine.ArgInt, Default: 0, Doc: "0 single label, 1 multi-label sparse, 2 multi-label dense, 3 multi-label weighted sparse, 4 no label"},
			{Name: "num_labels", Type: engine.ArgInt, Default: 1, Doc: "length of the label vector for label_type 1 and 3"},
			{Name: "additional_inputs", Type: engine.ArgInt, Default: 0, Doc: "number of extra protos after the label, each an output"},
			{Name: "bbox", Type: engine.ArgBool, Default: false, Doc: "the proto after the additional inputs is a bounding box of 4 int32"},
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.caffe2", "cpu", newCaffeReader(true))
}

// caffe2Out is one output of a sample: its dtype, shape and little-endian bytes.
type caffe2Out struct {
	dtype engine.DType
	shape []int
	data  []byte
}

type caffe2Sample struct {
	value []byte
	outs  []caffe2Out
}

func (st *caffe2Sample) add(dt engine.DType, data []byte, shape ...int) {
	st.outs = append(st.outs, caffe2Out{dtype: dt, shape: shape, data: data})
}

// parse2 reads a caffe2.TensorProtos as DALI's Caffe2 parser does.
func (r *caffeReader) parse2(v []byte, st *caffe2Sample) error {
	st.outs = st.outs[:0]
	ps, err := caffe.ParseTensorProtos(v)
	if err != nil {
		return err
	}
	next := 0
	proto := func(what string) (*caffe.TensorProto, error) {
		if next >= len(ps) {
			return nil, fmt.Errorf("caffe2 TensorProtos has %d protos; the %s would be proto %d", len(ps), what, next)
		}
		next++
		return &ps[next-1], nil
	}
	if r.image {
		p, err := proto("image")
		if err != nil {
			return err
		}
		switch p.DataType {
		case caffe.String:
			if len(p.StringData) != 1 {
				return fmt.Errorf("caffe2 image proto: %d strings, want 1", len(p.StringData))
			}
			st.add(engine.UInt8, p.StringData[0], len(p.StringData[0]))
		case caffe.Byte:
			if len(p.Dims) != 2 && len(p.Dims) != 3 {
				return fmt.Errorf("caffe2 image proto: BYTE data with dims %v, want [H, W] or [H, W, C]", p.Dims)
			}
			c := int64(1)
			if len(p.Dims) == 3 {
				c = p.Dims[2]
			}
			h, w := p.Dims[0], p.Dims[1]
			if h < 0 || w < 0 || c < 0 || h > math.MaxInt32 || w > math.MaxInt32 || c > math.MaxInt32 || h*w*c != int64(len(p.ByteData)) {
				return fmt.Errorf("caffe2 image proto: %d bytes for dims %v", len(p.ByteData), p.Dims)
			}
			st.add(engine.UInt8, p.ByteData, int(h), int(w), int(c))
		default:
			return fmt.Errorf("caffe2 image proto has data type %d, want STRING (4, encoded) or BYTE (3, raw)", p.DataType)
		}
	}
	if r.label {
		p, err := proto("label")
		if err != nil {
			return err
		}
		if p.DataType != caffe.Int32 && p.DataType != caffe.Float {
			return fmt.Errorf("caffe2 label proto has data type %d, want INT32 (2) or FLOAT (1)", p.DataType)
		}
		isInt := p.DataType == caffe.Int32
		n := len(p.FloatData)
		if isInt {
			n = len(p.Int32Data)
		}
		at := func(i int) float64 {
			if isInt {
				return float64(p.Int32Data[i])
			}
			return float64(p.FloatData[i])
		}
		dt := engine.Float32
		if isInt {
			dt = engine.Int32
		}
		switch r.labelType {
		case singleLabel, multiLabelDense:
			if r.labelType == singleLabel && n != 1 {
				return fmt.Errorf("caffe2 label proto holds %d values; label_type 0 wants 1", n)
			}
			st.add(dt, numbers(dt, n, at), n)
		case multiLabelSparse, multiLabelWeightedSparse:
			var weights *caffe.TensorProto
			if r.labelType == multiLabelWeightedSparse {
				if weights, err = proto("label weights"); err != nil {
					return err
				}
				if len(weights.FloatData) != n {
					return fmt.Errorf("caffe2 label weights: %d floats for %d indices", len(weights.FloatData), n)
				}
				dt = engine.Float32
			}
			vec := make([]float64, r.numLabels)
			for i := 0; i < n; i++ {
				k := at(i)
				if k < 0 || k >= float64(r.numLabels) || k != math.Trunc(k) {
					return fmt.Errorf("caffe2 label index %v outside [0, num_labels=%d)", k, r.numLabels)
				}
				vec[int(k)] = 1
				if weights != nil {
					vec[int(k)] = float64(weights.FloatData[i])
				}
			}
			st.add(dt, numbers(dt, r.numLabels, func(i int) float64 { return vec[i] }), r.numLabels)
		}
	}
	for i := 0; i < r.extra; i++ {
		p, err := proto(fmt.Sprintf("additional input %d", i))
		if err != nil {
			return err
		}
		switch p.DataType {
		case caffe.Float:
			st.add(engine.Float32, numbers(engine.Float32, len(p.FloatData), func(j int) float64 { return float64(p.FloatData[j]) }), len(p.FloatData))
		case caffe.Int32:
			st.add(engine.Int32, numbers(engine.Int32, len(p.Int32Data), func(j int) float64 { return float64(p.Int32Data[j]) }), len(p.Int32Data))
		case caffe.Int64:
			b := make([]byte, 0, 8*len(p.Int64Data))
			for _, x := range p.Int64Data {
				b = binary.LittleEndian.AppendUint64(b, uint64(x))
			}
			st.add(engine.Int64, b, len(p.Int64Data))
		default:
			return fmt.Errorf("caffe2 additional input %d has data type %d, want FLOAT (1), INT32 (2) or INT64 (10)", i, p.DataType)
		}
	}
	if r.bbox {
		p, err := proto("bbox")
		if err != nil {
			return err
		}
		if p.DataType != caffe.Int32 || len(p.Int32Data) != 4 {
			return fmt.Errorf("caffe2 bbox proto: want 4 INT32 values, got data type %d with %d", p.DataType, len(p.Int32Data))
		}
		st.add(engine.Int32, numbers(engine.Int32, 4, func(j int) float64 { return float64(p.Int32Data[j]) }), 4)
	}
	return nil
}
