package imaging

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Window filters over an image plane of h x w positions with c interleaved channels
// (each channel apart), dense float64: the rectangular morphology (DALI's
// experimental.dilate / erode, OpenCV's dilate/erode with a MORPH_RECT element) and the
// median (experimental.median_blur, OpenCV's medianBlur). Their cost does not grow with
// a window larger than the plane: such a window reads every position the border maps
// it to, which a window of at most twice the plane's extent reads too (morphology), or
// it weighs the repeated edge pixels instead of visiting them (median).

// WindowScratch is the reusable memory of MorphRect and MedianRect.
type WindowScratch struct {
	tmp, line, pre, suf []float64
	win                 []float64 // the sorted window of the small median
	order, rank         []int32   // the median's plane sorted by value, and each position's place
	tree                []int64   // the median's weights by place (a Fenwick tree)
}

// MorphRect sets dst[y, x] to the maximum (dilate) or minimum (erode) of src over the
// kh x kw window whose (ay, ax) element sits on (y, x): rows y-ay .. y-ay+kh-1, columns
// x-ax .. x-ax+kw-1. Positions outside the plane read through border; BorderConstant
// leaves them out (OpenCV's default border value for morphology). The window is
// separable: one pass along x, one along y, each linear in the plane's size whatever
// the window's.
func MorphRect(dst, src []float64, h, w, c, kh, kw, ay, ax int, border Border, dilate bool, s *WindowScratch) error {
	n := h * w * c
	if kh < 1 || kw < 1 || ay < 0 || ay >= kh || ax < 0 || ax >= kw {
		return fmt.Errorf("morphology: window %dx%d with anchor (%d, %d)", kh, kw, ay, ax)
	}
	if len(src) < n || len(dst) < n {
		return fmt.Errorf("morphology: buffers of %d and %d values for %dx%dx%d", len(src), len(dst), h, w, c)
	}
	if n == 0 {
		return nil
	}
	s.tmp = growWin(s.tmp, n)
	// rows: along x, lines of w values c apart
	for y := 0; y < h; y++ {
		for ch := 0; ch < c; ch++ {
			o := y*w*c + ch
			s.extremeLine(s.tmp[o:], src[o:], c, w, kw, ax, border, dilate)
		}
	}
	// columns: along y, lines of h values w*c apart
	for x := 0; x < w; x++ {
		for ch := 0; ch < c; ch++ {
			o := x*c + ch
			s.extremeLine(dst[o:], s.tmp[o:], w*c, h, kh, ay, border, dilate)
		}
	}
	return nil
}

// extremeLine sets dst[i*stride] (i < n) to the extreme of the line src[j*stride] over
// the k positions i-a .. i-a+k-1, read through border, with van Herk and Gil-Werman's
// running extreme: three comparisons a position, whatever k.
func (s *WindowScratch) extremeLine(dst, src []float64, stride, n, k, a int, border Border, dilate bool) {
	pick := math.Min
	if dilate {
		pick = math.Max
	}
	if k == 1 {
		for i := 0; i < n; i++ {
			dst[i*stride] = src[i*stride]
		}
		return
	}
	left, right := a, k-1-a // reach before and after the position
	switch border {
	case BorderConstant, BorderClamp:
		// The window always holds its own position, so what lies past an end is the end
		// value (clamp) or nothing (constant): a reach beyond the line adds nothing.
		left, right = min(left, n-1), min(right, n-1)
	default:
		// Periodic modes: a window of a whole period or more holds every position.
		period := n
		switch {
		case border == BorderReflect1001:
			period = 2 * n
		case border == BorderReflect101 && n > 1:
			period = 2 * (n - 1)
		}
		if k >= period {
			e := src[0]
			for i := 1; i < n; i++ {
				e = pick(e, src[i*stride])
			}
			for i := 0; i < n; i++ {
				dst[i*stride] = e
			}
			return
		}
	}
	k = left + right + 1
	m := n + k - 1 // the line with its reach on both sides: line[t] is position t-left
	ident := math.Inf(1)
	if dilate {
		ident = math.Inf(-1)
	}
	s.line, s.pre, s.suf = growWin(s.line, m), growWin(s.pre, m), growWin(s.suf, m)
	line, pre, suf := s.line, s.pre, s.suf
	for t := 0; t < m; t++ {
		if j := borderIndex(t-left, n, border); j >= 0 {
			line[t] = src[j*stride]
		} else {
			line[t] = ident
		}
	}
	// pre: the extreme from the start of t's block of k to t; suf: from t to its end.
	for t := 0; t < m; t++ {
		if t%k == 0 {
			pre[t] = line[t]
		} else {
			pre[t] = pick(pre[t-1], line[t])
		}
	}
	for t := m - 1; t >= 0; t-- {
		if t == m-1 || (t+1)%k == 0 {
			suf[t] = line[t]
		} else {
			suf[t] = pick(suf[t+1], line[t])
		}
	}
	// The window [i, i+k-1] spans at most two blocks: the end of one and the start of the next.
	for i := 0; i < n; i++ {
		dst[i*stride] = pick(suf[i], pre[i+k-1])
	}
}

// medianSortMax is the largest window the median sorts whole at each position; larger
// ones keep a weighted count of the plane's values that moves with the window.
const medianSortMax = 64

// MedianRect sets dst[y, x] to the median of src over the kh x kw window centred on
// (y, x) (kh and kw odd), edge pixels repeated past the borders (OpenCV's medianBlur).
// A window of more than medianSortMax positions costs O(min(kh, h) log(h w)) a
// position: the window's positions past an edge are the edge pixel counted again.
func MedianRect(dst, src []float64, h, w, c, kh, kw int, s *WindowScratch) error {
	n := h * w * c
	if kh < 1 || kw < 1 || kh%2 == 0 || kw%2 == 0 {
		return fmt.Errorf("median: window %dx%d: the sizes must be odd", kh, kw)
	}
	if len(src) < n || len(dst) < n {
		return fmt.Errorf("median: buffers of %d and %d values for %dx%dx%d", len(src), len(dst), h, w, c)
	}
	if n == 0 {
		return nil
	}
	if kh*kw > medianSortMax {
		for ch := 0; ch < c; ch++ {
			s.medianCounted(dst, src, h, w, c, ch, kh/2, kw/2)
		}
		return nil
	}
	k := kh * kw
	s.win = growWin(s.win, k)
	win := s.win
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				m := 0
				for dy := 0; dy < kh; dy++ {
					i := borderIndex(y-kh/2+dy, h, BorderClamp)
					for dx := 0; dx < kw; dx++ {
						j := borderIndex(x-kw/2+dx, w, BorderClamp)
						win[m] = src[(i*w+j)*c+ch]
						m++
					}
				}
				slices.Sort(win)
				dst[(y*w+x)*c+ch] = win[k/2]
			}
		}
	}
	return nil
}

// edgeCount is how many of the window positions lo..hi along an axis of extent n read
// position i when the edges repeat (the first and last positions take the overhang).
func edgeCount(i, lo, hi, n int) int {
	a, b := i, i // the window positions that read i
	if i == 0 {
		a = math.MinInt
	}
	if i == n-1 {
		b = math.MaxInt
	}
	a, b = max(a, lo), min(b, hi)
	if a > b {
		return 0
	}
	return b - a + 1
}

// medianCounted is MedianRect for channel ch with a window of (2ry+1) x (2rx+1) whose
// values are counted in a Fenwick tree over their places in the sorted plane: the window
// walks the plane row by row, back and forth, and each step moves the counts of one row
// or column of the plane (a repeated edge pixel weighs as many positions as read it).
func (s *WindowScratch) medianCounted(dst, src []float64, h, w, c, ch, ry, rx int) {
	np := h * w
	s.order, s.rank = growI32(s.order, np), growI32(s.rank, np)
	if cap(s.tree) < np+1 {
		s.tree = make([]int64, np+1)
	}
	tree := s.tree[:np+1]
	clear(tree)
	order, rank := s.order, s.rank
	for p := range order {
		order[p] = int32(p)
	}
	val := func(p int32) float64 { return src[int(p)*c+ch] }
	slices.SortFunc(order, func(a, b int32) int {
		if r := cmp.Compare(val(a), val(b)); r != 0 {
			return r
		}
		return cmp.Compare(a, b)
	})
	for r, p := range order {
		rank[p] = int32(r)
	}
	add := func(p int, wt int64) {
		for i := int(rank[p]) + 1; i <= np; i += i & -i {
			tree[i] += wt
		}
	}
	// The place holding the window's middle value: the first whose running count passes half.
	half := int64(2*ry+1) * int64(2*rx+1) / 2
	step := 1
	for step*2 <= np {
		step *= 2
	}
	median := func() float64 {
		pos, acc := 0, int64(0)
		for b := step; b > 0; b /= 2 {
			if pos+b <= np && acc+tree[pos+b] <= half {
				pos += b
				acc += tree[pos]
			}
		}
		return val(order[pos])
	}
	// The plane's rows and columns a window centred on (y, x) reads.
	rowsOf := func(y int) (int, int) { return max(0, y-ry), min(h-1, y+ry) }
	colsOf := func(x int) (int, int) { return max(0, x-rx), min(w-1, x+rx) }
	// moveCol adds column j read with weight sign to the window centred on row y.
	moveCol := func(j, y int, sign int64) {
		r0, r1 := rowsOf(y)
		for i := r0; i <= r1; i++ {
			add(i*w+j, sign*int64(edgeCount(i, y-ry, y+ry, h)))
		}
	}
	moveRow := func(i, x int, sign int64) {
		c0, c1 := colsOf(x)
		for j := c0; j <= c1; j++ {
			add(i*w+j, sign*int64(edgeCount(j, x-rx, x+rx, w)))
		}
	}
	clampRow := func(t int) int { return min(max(t, 0), h-1) }
	clampCol := func(t int) int { return min(max(t, 0), w-1) }
	{
		r0, r1 := rowsOf(0)
		c0, c1 := colsOf(0)
		for i := r0; i <= r1; i++ {
			for j := c0; j <= c1; j++ {
				add(i*w+j, int64(edgeCount(i, -ry, ry, h))*int64(edgeCount(j, -rx, rx, w)))
			}
		}
	}
	x := 0
	for y := 0; y < h; y++ {
		if y > 0 {
			// down one row: the window's top row leaves, the one below its bottom enters
			if out, in := clampRow(y-1-ry), clampRow(y+ry); out != in {
				moveRow(out, x, -1)
				moveRow(in, x, 1)
			}
		}
		dir := 1
		if y%2 == 1 {
			dir = -1
		}
		for {
			dst[(y*w+x)*c+ch] = median()
			nx := x + dir
			if nx < 0 || nx >= w {
				break
			}
			var out, in int
			if dir > 0 {
				out, in = clampCol(x-rx), clampCol(nx+rx)
			} else {
				out, in = clampCol(x+rx), clampCol(nx-rx)
			}
			if out != in {
				moveCol(out, y, -1)
				moveCol(in, y, 1)
			}
			x = nx
		}
	}
}

func growWin(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func growI32(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}
