package image

import (
	"math"
	"testing"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// laplacianWhole is the laplacian filtering the whole sample at once (the operator's
// computation before it was tiled): each partial derivative is separable convolutions
// along every spatial axis, last axis first, over float64 copies of the whole sample.
func laplacianWhole(in []float64, shape, axes, ws, ss []int, scales []float64) []float64 {
	n := len(in)
	a, b, acc := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range axes {
		src := in
		for j := len(axes) - 1; j >= 0; j-- {
			win := make([]float64, ss[j])
			if j == i {
				win = make([]float64, ws[i])
				imaging.SecondDerivWindow(win)
			} else {
				imaging.SmoothingWindow(win)
			}
			if len(win) == 1 {
				continue
			}
			dst := a
			if &src[0] == &a[0] {
				dst = b
			}
			if err := imaging.ConvAxis(dst, src, shape, axes[j], win, len(win)/2, imaging.BorderReflect101, 0, 0, shape[axes[j]]); err != nil {
				panic(err)
			}
			src = dst
		}
		for k, v := range src {
			acc[k] += scales[i] * v
		}
	}
	return acc
}

// TestLaplacianTilesMatchWholeSample: the tiled computation gives the float64 sums of
// filtering the whole sample, bit for bit, for tiles of one row up to the whole axis
// (tile boundaries inside the windows' reach, halos reflected past both ends, planes of
// a leading F or C), 1 to 3 spatial axes, windows 3 to 9, smoothing 1 (no smoothing).
func TestLaplacianTilesMatchWholeSample(t *testing.T) {
	cases := []struct {
		layout string
		shape  []int
		ws, ss []int
	}{
		{"HWC", []int{23, 17, 3}, []int{3, 3}, []int{3, 3}},
		{"HWC", []int{19, 11, 2}, []int{5, 7}, []int{1, 3}},
		{"HW", []int{4, 9}, []int{9, 3}, []int{9, 1}}, // halo deeper than the axis
		{"FHWC", []int{3, 13, 7, 1}, []int{5, 5}, []int{5, 5}},
		{"CHW", []int{2, 10, 6}, []int{3, 5}, []int{3, 3}},
		{"DHWC", []int{7, 6, 5, 2}, []int{3, 5, 3}, []int{3, 1, 5}},
		{"W", []int{29}, []int{7}, []int{7}},
	}
	for ci, c := range cases {
		axes, msg := spatialAxes(c.layout, len(c.shape))
		if msg != "" {
			t.Fatal(msg)
		}
		n := 1
		for _, d := range c.shape {
			n *= d
		}
		vals := make([]float64, n)
		raw := make([]byte, n*2)
		for i := range vals {
			v := int16((i*7919)%1021 - 510)
			vals[i] = float64(v)
			engine.WriteScalarSat(raw[i*2:], engine.Int16, float64(v))
		}
		scales := make([]float64, len(axes))
		for i := range scales {
			scales[i] = 0.75 + 0.5*float64(i)
		}
		want := laplacianWhole(vals, c.shape, axes, c.ws, c.ss, scales)
		inner := 1 // elements per row of the tiled axis
		for _, d := range c.shape[axes[0]+1:] {
			inner *= d
		}
		for _, rows := range []int{1, 2, 3, 5, c.shape[axes[0]], 1 << 20} {
			st := &laplacianState{ws: c.ws, ss: c.ss}
			out := make([]byte, n*8)
			if err := st.compute(out, engine.Float64, raw, engine.Int16, c.shape, axes, scales, rows*inner); err != nil {
				t.Fatal(err)
			}
			for k := range want {
				got := engine.ReadScalar(out[k*8:], engine.Float64)
				if math.Float64bits(got) != math.Float64bits(want[k]) {
					t.Fatalf("case %d %s %v, tiles of %d rows: element %d = %v, whole sample gives %v",
						ci, c.layout, c.shape, rows, k, got, want[k])
				}
			}
		}
	}
}

// TestLaplacianScratchIsTiled: a worker's float64 buffers stay a few tiles long for a
// large sample instead of four whole-sample copies.
func TestLaplacianScratchIsTiled(t *testing.T) {
	const h, w, c = 1200, 900, 3
	raw := make([]byte, h*w*c)
	out := make([]byte, h*w*c)
	st := &laplacianState{ws: []int{3, 3}, ss: []int{3, 3}}
	if err := st.compute(out, engine.UInt8, raw, engine.UInt8, []int{h, w, c}, []int{0, 1}, []float64{1, 1}, laplacianTileElems); err != nil {
		t.Fatal(err)
	}
	held := cap(st.in) + cap(st.a) + cap(st.b) + cap(st.acc)
	if limit := 8 * laplacianTileElems; held > limit {
		t.Fatalf("scratch of %d float64 for a %dx%dx%d sample, want at most %d", held, h, w, c, limit)
	}
}
