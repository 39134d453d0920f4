package imaging

import "fmt"

// FloatTaps are an axis' resampling taps as float weights: output i is the sum over
// k < Taps of W[i*Taps+k] * in[Idx[i*Taps+k]]. They come from AxisTaps, so that any
// type resamples with the very filters the uint8 resize uses.
type FloatTaps struct {
	Taps int
	Idx  []int32
	W    []float32
	axis AxisTaps
}

// Init computes the taps of an axis of n samples resampled over [in0, in1) to out
// samples.
func (t *FloatTaps) Init(n int, in0, in1 float64, out int, interp Interp, antialias bool) error {
	if n < 1 || out < 1 || !(in1 > in0) {
		return fmt.Errorf("resample: axis of %d elements, window [%g, %g), %d outputs", n, in0, in1, out)
	}
	t.Taps = 0
	t.axis.Each(n, in0, in1, out, interp, antialias, func(_ int32, w []int32) { t.Taps = max(t.Taps, len(w)) })
	t.Idx, t.W = t.Idx[:0], t.W[:0]
	t.axis.Each(n, in0, in1, out, interp, antialias, func(start int32, w []int32) {
		for k := 0; k < t.Taps; k++ {
			idx, wt := int(start), float32(0)
			if k < len(w) {
				idx, wt = int(start)+k, float32(float64(w[k])/FixedOne)
			}
			t.Idx = append(t.Idx, int32(min(max(idx, 0), n-1)))
			t.W = append(t.W, wt)
		}
	})
	return nil
}

// Shift moves the taps by off elements: taps built for a window of an axis, applied
// to the axis the window starts off elements into.
func (t *FloatTaps) Shift(off int) {
	for i := range t.Idx {
		t.Idx[i] += int32(off)
	}
}

// ResampleAxis resamples the middle axis of a [d0, n, d2] tensor (element k read by
// at(src, k)) into dst [d0, out, d2] with the taps t (out = len(t.Idx) / t.Taps).
func ResampleAxis[S any](dst []float32, src S, at func(S, int) float32, d0, n, d2 int, t *FloatTaps) error {
	out := len(t.Idx) / max(t.Taps, 1)
	if len(dst) < d0*out*d2 {
		return fmt.Errorf("resample: output of %d elements for [%d %d %d]", len(dst), d0, out, d2)
	}
	for a := 0; a < d0; a++ {
		for i := 0; i < out; i++ {
			row := dst[(a*out+i)*d2 : (a*out+i+1)*d2]
			for c := range row {
				row[c] = 0
			}
			for k := 0; k < t.Taps; k++ {
				w := t.W[i*t.Taps+k]
				if w == 0 {
					continue
				}
				base := (a*n + int(t.Idx[i*t.Taps+k])) * d2
				for c := range row {
					row[c] += w * at(src, base+c)
				}
			}
		}
	}
	return nil
}
