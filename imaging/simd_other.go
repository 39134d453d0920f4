//go:build !amd64

package imaging

import "unsafe"

// Without the amd64 kernels (simd_amd64.s) the scalar kernels do all the work.
const useAVX2 = false

const maxVecTaps = 64

func (pp *pairPlan) build(w []int32, taps []tap, k, inSize int) {}

func hpass3Vec[O hout](out []O, in []byte, taps []tap, w []int32, pp *pairPlan, i0, k int) bool {
	return false
}

func hpass4Vec[O hout](out []O, in []byte, taps []tap, w, wAll []int32, k int) bool {
	return false
}

func vfiltVec(out []byte, rows []unsafe.Pointer, w []int32) {
	panic("imaging: vfiltVec without a vector unit")
}

const (
	hasFMA  = false
	hasF16C = false
)

func chw3F32Vec[T uint16 | uint32](d0, d1, d2 []T, px []byte, t0, t1, t2 *[256]T, coef *[6]float64, mirror bool) bool {
	return false
}

func halfBits(dst *[256]uint16, src *[256]float32) {
	panic("imaging: halfBits without a vector unit")
}
