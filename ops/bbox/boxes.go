package bbox

import (
	"encoding/binary"
	"math"

	"github.com/godali/godali/engine"
)

func f32(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

func putF32(b []byte, i int, v float32) {
	binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
}

// checkBoxesMeta checks at build time that an input can be float32 [N, 4] boxes.
func checkBoxesMeta(a *engine.Args, m engine.TensorMeta, what string) error {
	if m.DType != engine.Float32 || len(m.Shape) != 2 || (m.Shape[1] != 4 && m.Shape[1] != -1) {
		return a.Invalidf("%s must be float32 boxes of shape [N, 4] (e.g. from readers.coco), got %s %v", what, m.DType, m.Shape)
	}
	return nil
}

// numBoxes checks a sample of boxes and returns N.
func numBoxes(t *engine.Tensor) (int, error) {
	if len(t.Shape) != 2 || t.Shape[1] != 4 || t.DType != engine.Float32 {
		return 0, engine.Errorf(engine.StatusData, "boxes must be float32 [N, 4], got %s %v", t.DType, t.Shape)
	}
	return t.Shape[0], nil
}
