package imaging

import (
	"fmt"
	"math"
)

// precisionBits is the fixed-point precision of the 8-bit resampling weights. It is
// PIL's value (32 - 8 - 2): a weighted sum of 8-bit pixels then fits in an int32 even
// with the negative lobes of cubic and Lanczos filters, and results match PIL's exactly.
const precisionBits = 22

const (
	fixedOne  = 1 << precisionBits
	fixedHalf = 1 << (precisionBits - 1)
)

// maxDim bounds image sizes and ROI coordinates so that index arithmetic cannot overflow.
const maxDim = 1 << 24

type axisKind uint8

const (
	axisIdentity axisKind = iota // output equals input along this axis: the pass is skipped
	axisNearest                  // one source index per output
	axisFilter                   // fixed-point convolution
)

// tap describes the weights of one output sample: source indices start..start+n-1
// weighted by w[off:off+n].
type tap struct {
	start, n, off int32
}

type axisPlan struct {
	kind axisKind
	idx  []int32 // axisNearest
	taps []tap   // axisFilter
	w    []int32 // axisFilter, packed per output
	// fixed, when non-zero, is the common tap count of every output after padding
	// with zero weights (see padFixed); then taps[i].off == i*fixed.
	fixed int
	wp    []int32  // padded weights
	pairs pairPlan // the fixed taps laid out for the AVX2 pair kernel
	// nonNeg: no weight is negative (triangle filters), so sums never leave 0..255
	// and need no clamping.
	nonNeg bool
}

// ResizePlan holds the precomputed weights that resample a source window (ROI) of a
// SrcW x SrcH image to DstW x DstH. Build it with NewResizePlan or Init; a plan is
// read-only while resizing, so one plan may serve several goroutines with their own
// Scratch.
type ResizePlan struct {
	SrcW, SrcH int
	DstW, DstH int
	ROI        [4]float64 // x0, y0, x1, y1 in source pixels (edges); x1 < x0 flips
	Interp     Interp
	Antialias  bool

	err  error
	h, v axisPlan
	coef []float64
}

// FullROI is the ROI that covers a whole w x h image.
func FullROI(w, h int) [4]float64 { return [4]float64{0, 0, float64(w), float64(h)} }

// NewResizePlan builds a plan that resamples the window roi = {x0, y0, x1, y1} (float
// source coordinates of pixel edges; x1 < x0 or y1 < y0 flips that axis) of a
// srcW x srcH image to dstW x dstH. Destination pixel i samples source coordinate
// x0 + (i+0.5)*(x1-x0)/dstW - 0.5 (pixel centres at integer coordinates), the
// convention of PIL and DALI. With antialias set (DALI's default), a downscaling
// filter is widened by the scale factor, which is PIL's resampling and DALI's
// antialiasing; without it, and when upscaling, filters keep their natural support.
// InterpNN is never widened.
//
// With a non-nil s the plan's memory comes from s: the returned plan belongs to s and
// is overwritten by the next NewResizePlan call with the same s, which keeps the steady
// state free of allocations. With a nil s the plan is freshly allocated.
//
// Invalid arguments do not panic: the plan records the error, which Err, Resize and
// ResizeCropMirrorNormalize return.
func NewResizePlan(srcW, srcH int, roi [4]float64, dstW, dstH int, interp Interp, antialias bool, s *Scratch) *ResizePlan {
	var p *ResizePlan
	if s != nil {
		p = &s.plan
	} else {
		p = new(ResizePlan)
	}
	p.Init(srcW, srcH, roi, dstW, dstH, interp, antialias)
	return p
}

// Err reports why the plan could not be built, or nil.
func (p *ResizePlan) Err() error { return p.err }

// Init (re)builds p in place, reusing its memory; it returns the same error as Err.
func (p *ResizePlan) Init(srcW, srcH int, roi [4]float64, dstW, dstH int, interp Interp, antialias bool) error {
	p.SrcW, p.SrcH, p.DstW, p.DstH = srcW, srcH, dstW, dstH
	p.ROI, p.Interp, p.Antialias = roi, interp, antialias
	p.err = p.check()
	if p.err != nil {
		p.h.kind, p.v.kind = axisIdentity, axisIdentity
		return p.err
	}
	// Coordinates are taken at float32 precision, as PIL (and DALI) store them; this
	// keeps fractional ROIs bit-exact with PIL.
	for i, v := range roi {
		roi[i] = float64(float32(v))
	}
	p.h.init(srcW, roi[0], roi[2], dstW, interp, antialias, &p.coef)
	p.v.init(srcH, roi[1], roi[3], dstH, interp, antialias, &p.coef)
	p.h.padFixed(srcW)
	return nil
}

func (p *ResizePlan) check() error {
	if !p.Interp.valid() {
		return fmt.Errorf("resize: interp_type %d: expected %v..%v", int(p.Interp), InterpNN, InterpTriangular)
	}
	if p.SrcW < 1 || p.SrcH < 1 || p.SrcW > maxDim || p.SrcH > maxDim {
		return fmt.Errorf("resize: source size %dx%d: expected 1..%d per side", p.SrcW, p.SrcH, maxDim)
	}
	if p.DstW < 1 || p.DstH < 1 || p.DstW > maxDim || p.DstH > maxDim {
		return fmt.Errorf("resize: output size %dx%d: expected 1..%d per side", p.DstW, p.DstH, maxDim)
	}
	for _, v := range p.ROI {
		if math.IsNaN(v) || math.Abs(v) > maxDim {
			return fmt.Errorf("resize: roi %v: expected finite coordinates within +-%d", p.ROI, maxDim)
		}
	}
	return nil
}

func (p *ResizePlan) bytes() int {
	return 4*(cap(p.h.idx)+cap(p.v.idx)+cap(p.h.w)+cap(p.v.w)+cap(p.h.wp)+cap(p.v.wp)+cap(p.h.pairs.table)+cap(p.h.pairs.run)) +
		12*(cap(p.h.taps)+cap(p.v.taps)) + 8*cap(p.coef)
}

func (a *axisPlan) init(inSize int, in0, in1 float64, outSize int, interp Interp, antialias bool, coef *[]float64) {
	// PIL skips a pass exactly when the axis is neither scaled nor cropped; doing the
	// same keeps the results identical and saves the work.
	if outSize == inSize && in0 == 0 && in1 == float64(inSize) {
		a.kind = axisIdentity
		return
	}
	// The ROI width is a float32 difference, as in PIL (in0 and in1 are float32 there).
	scale := float64(float32(in1)-float32(in0)) / float64(outSize)
	if interp == InterpNN {
		a.kind = axisNearest
		// PIL's nearest (ImagingScaleAffine): the position starts at in0 + scale/2 and
		// is advanced by adding scale, whose rounding decides the rare ties between
		// two columns (a product (i+0.5)*scale picks the other one there).
		a.idx = grow(a.idx, outSize)
		pos := in0 + scale*0.5
		for i := range a.idx {
			a.idx[i] = int32(clampInt(int(math.Floor(pos)), 0, inSize-1))
			pos += scale
		}
		return
	}
	a.kind = axisFilter
	a.fixed = 0
	a.nonNeg = true
	fs := math.Abs(scale)
	if fs < 1 || !antialias {
		fs = 1
	}
	support := interp.support() * fs
	ksize := int(math.Ceil(support))*2 + 1
	*coef = grow(*coef, ksize)
	ks := (*coef)[:ksize]
	a.taps = grow(a.taps, outSize)
	a.w = grow(a.w, outSize*ksize)[:0]
	inv := 1 / fs
	tri := interp == InterpLinear || interp == InterpTriangular
	for i := range a.taps {
		// Centre in edge coordinates; tap x's centre is at x+0.5.
		center := in0 + (float64(i)+0.5)*scale
		xmin := max(int(center-support+0.5), 0)
		xmax := min(int(center+support+0.5), inSize)
		n := min(max(xmax-xmin, 0), ksize)
		sum := 0.0
		if tri {
			// interp.weight of the triangle filter, inline: the plan is built for
			// every sample of a random crop.
			for x := range ks[:n] {
				d := (float64(x+xmin) - center + 0.5) * inv
				if d < 0 {
					d = -d
				}
				w := 0.0
				if d < 1 {
					w = 1 - d
				}
				ks[x] = w
				sum += w
			}
		} else {
			for x := range ks[:n] {
				w := interp.weight((float64(x+xmin) - center + 0.5) * inv)
				ks[x] = w
				sum += w
			}
		}
		off := len(a.w)
		if sum != 0 {
			// a.w has room for ksize weights per output.
			a.w = a.w[:off+n]
			for x, k := range ks[:n] {
				v := k / sum * fixedOne
				if v < 0 {
					a.w[off+x] = int32(v - 0.5)
				} else {
					a.w[off+x] = int32(v + 0.5)
				}
			}
		}
		// Zero weights at the ends cost time and change nothing.
		lo, hi := off, len(a.w)
		for lo < hi && a.w[lo] == 0 {
			lo++
		}
		for hi > lo && a.w[hi-1] == 0 {
			hi--
		}
		if lo == hi {
			// No source pixel under the filter (an ROI beyond the image edge): PIL
			// would output black; replicating the nearest edge pixel is what DALI does.
			a.w = append(a.w[:off], fixedOne)
			a.taps[i] = tap{start: int32(clampInt(int(math.Floor(center)), 0, inSize-1)), n: 1, off: int32(off)}
			continue
		}
		copy(a.w[off:], a.w[lo:hi])
		a.w = a.w[:off+hi-lo]
		for _, v := range a.w[off:] {
			a.nonNeg = a.nonNeg && v >= 0
		}
		a.taps[i] = tap{start: int32(xmin + lo - off), n: int32(hi - lo), off: int32(off)}
	}
}

// padFixed gives every output the same number of taps by adding zero weights, moving
// the window left where it would pass the image's end. The tap count of neighbouring
// outputs varies irregularly (4, 5, 5, 4, 5 ...), and a loop whose trip count the
// branch predictor cannot learn costs more than the few multiplications by zero; with
// a fixed count the horizontal kernels are fully unrolled. Counts above 8 are rounded
// up to a multiple of 4 for the blocked kernel when the image is wide enough.
func (a *axisPlan) padFixed(inSize int) {
	if a.kind != axisFilter {
		return
	}
	k := 0
	for _, t := range a.taps {
		k = max(k, int(t.n))
	}
	if k > 8 && (k+3)&^3 <= inSize {
		k = (k + 3) &^ 3
	}
	a.wp = grow(a.wp, len(a.taps)*k)
	clear(a.wp)
	for i, t := range a.taps {
		st, lead := int(t.start), 0
		if st+k > inSize {
			lead = st + k - inSize
			st = inSize - k
		}
		copy(a.wp[i*k+lead:], a.w[t.off:t.off+t.n])
		a.taps[i] = tap{start: int32(st), n: int32(k), off: int32(i * k)}
	}
	a.w, a.wp = a.wp, a.w
	a.fixed = k
	a.pairs.build(a.w, a.taps, k, inSize)
}

// pairPlan is the horizontal axis laid out for the AVX2 pair kernel (hpair3AVX2,
// simd_amd64.go), which resamples outputs 2p and 2p+1 together.
type pairPlan struct {
	k      int     // taps per output; 0: the kernel does not run
	rowLen int     // bytes of the source row the offsets index
	table  []int32 // per pair: the outputs' first byte offsets, then their weights per tap
	// run[p]: how many pairs from p on have their loads inside the row.
	run []int32
}

func clampInt(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
