package imaging

// FixedOne is the fixed-point weight 1.0 of resize filters (PIL's 22 fractional bits).
const FixedOne = fixedOne

// AxisTaps computes, for other backends (the GPU kernels), the filter taps the CPU
// resize uses along one axis, so that both resample with the very same weights.
// Identity and nearest-neighbour axes come out as single taps of weight FixedOne. The
// zero value is ready; its memory is reused, so planning allocates nothing once grown.
type AxisTaps struct {
	plan axisPlan
	coef []float64
	one  [1]int32
}

// Each computes the taps of an axis of inSize samples resampled over [in0, in1) to
// outSize samples and calls fn for every output sample in order, with the first source
// index and the weights (valid only during the call).
func (t *AxisTaps) Each(inSize int, in0, in1 float64, outSize int, interp Interp, antialias bool, fn func(start int32, w []int32)) {
	t.one[0] = fixedOne
	a := &t.plan
	a.init(inSize, in0, in1, outSize, interp, antialias, &t.coef)
	switch a.kind {
	case axisIdentity:
		for i := 0; i < outSize; i++ {
			fn(int32(i), t.one[:])
		}
	case axisNearest:
		for _, idx := range a.idx[:outSize] {
			fn(idx, t.one[:])
		}
	default:
		for _, tp := range a.taps[:outSize] {
			fn(tp.start, a.w[tp.off:tp.off+tp.n])
		}
	}
}
