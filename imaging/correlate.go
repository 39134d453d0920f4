package imaging

import "fmt"

// Correlation is a non-separable correlation over 1 to 3 spatial axes (DALI's
// experimental.filter): out[p] = sum_t win[t] * in[p + t - anchor], per channel, reading
// past the ends as Border says. Valid drops the border: the output is shape - fshape + 1
// along each axis, the anchor is 0 and no position reads outside the input.
type Correlation struct {
	Shape  []int     // spatial extents of the input
	Inner  int       // channels: values per spatial position (interleaved, not mixed)
	Win    []float64 // the filter, dense, of shape FShape (C order)
	FShape []int
	Anchor []int // per axis, in [0, FShape[d])
	Border Border
	Fill   float64 // the value outside the input for BorderConstant
	Valid  bool

	idx [][]int // per axis: input index read by output position p and tap t, at p*FShape[d]+t (-1: Fill)
}

// OutShape is the output's spatial extents (an error if a valid output would be negative).
func (c *Correlation) OutShape(buf []int) ([]int, error) {
	out := buf[:0]
	if len(c.FShape) != len(c.Shape) || len(c.Anchor) != len(c.Shape) {
		return nil, fmt.Errorf("correlate: %d spatial axes, filter %v, anchor %v", len(c.Shape), c.FShape, c.Anchor)
	}
	for d, n := range c.Shape {
		if c.FShape[d] < 1 {
			return nil, fmt.Errorf("correlate: filter of shape %v has no elements", c.FShape)
		}
		if c.Valid {
			n -= c.FShape[d] - 1
			if n < 0 {
				return nil, fmt.Errorf("correlate: filter %v is larger than the input %v", c.FShape, c.Shape)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// Run writes the correlation of src (the input, dense: spatial positions of Inner values)
// into dst (the output, dense, OutShape times Inner). dst must not overlap src.
func (c *Correlation) Run(dst, src []float64) error {
	var ob [3]int
	out, err := c.OutShape(ob[:0])
	if err != nil {
		return err
	}
	k := len(c.Shape)
	if k < 1 || k > 3 {
		return fmt.Errorf("correlate: %d spatial axes (1 to 3 supported)", k)
	}
	nIn, nOut, nWin := c.Inner, c.Inner, 1
	for d := 0; d < k; d++ {
		nIn *= c.Shape[d]
		nOut *= out[d]
		nWin *= c.FShape[d]
		if a := c.Anchor[d]; !c.Valid && (a < 0 || a >= c.FShape[d]) {
			return fmt.Errorf("correlate: anchor %v outside the filter %v", c.Anchor, c.FShape)
		}
	}
	if len(src) < nIn || len(dst) < nOut || len(c.Win) < nWin {
		return fmt.Errorf("correlate: buffers of %d, %d and %d elements for input %v, output %v, filter %v", len(src), len(dst), len(c.Win), c.Shape, out, c.FShape)
	}
	if nOut == 0 {
		return nil
	}
	if nIn == 0 && c.Border != BorderConstant {
		return fmt.Errorf("correlate: an empty input %v has no border to read", c.Shape)
	}
	c.tables(out)
	// Leading axes (all but the last) with an odometer over output rows; the last axis
	// is the inner loop.
	lastOut, lastF := out[k-1], c.FShape[k-1]
	lastIdx := c.idx[k-1]
	rowLen := lastOut * c.Inner
	inRow := c.Shape[k-1] * c.Inner
	var pos, tap [3]int
	for r := 0; r < nOut; r += rowLen {
		row := dst[r : r+rowLen]
		clear(row)
		// every tap of the leading axes
		for t := range tap[:k-1] {
			tap[t] = 0
		}
		for w0 := 0; w0 < nWin; w0 += lastF {
			base := 0 // input row of these leading taps, -1 for the fill value
			for d := 0; d < k-1; d++ {
				j := c.idx[d][pos[d]*c.FShape[d]+tap[d]]
				if j < 0 || base < 0 {
					base = -1
					continue
				}
				base = base*c.Shape[d] + j
			}
			ws := c.Win[w0 : w0+lastF]
			if base < 0 {
				var s float64
				for _, w := range ws {
					s += w
				}
				for i := range row {
					row[i] += s * c.Fill
				}
			} else {
				in := src[base*inRow : (base+1)*inRow]
				for t, w := range ws {
					if w == 0 {
						continue
					}
					for x := 0; x < lastOut; x++ {
						o := row[x*c.Inner : (x+1)*c.Inner]
						j := lastIdx[x*lastF+t]
						if j < 0 {
							for ch := range o {
								o[ch] += w * c.Fill
							}
							continue
						}
						v := in[j*c.Inner : (j+1)*c.Inner]
						for ch := range o {
							o[ch] += w * v[ch]
						}
					}
				}
			}
			for d := k - 2; d >= 0; d-- { // next leading tap
				tap[d]++
				if tap[d] < c.FShape[d] {
					break
				}
				tap[d] = 0
			}
		}
		for d := k - 2; d >= 0; d-- { // next output row
			pos[d]++
			if pos[d] < out[d] {
				break
			}
			pos[d] = 0
		}
	}
	return nil
}

// tables fills idx: for each axis, the input index every (output position, tap) reads.
func (c *Correlation) tables(out []int) {
	k := len(c.Shape)
	if cap(c.idx) < k {
		c.idx = make([][]int, k)
	}
	c.idx = c.idx[:k]
	for d := 0; d < k; d++ {
		f, n := c.FShape[d], c.Shape[d]
		need := out[d] * f
		if cap(c.idx[d]) < need {
			c.idx[d] = make([]int, need)
		}
		t := c.idx[d][:need]
		a := c.Anchor[d]
		if c.Valid {
			a = 0
		}
		for p := 0; p < out[d]; p++ {
			for j := 0; j < f; j++ {
				t[p*f+j] = borderIndex(p+j-a, n, c.Border)
			}
		}
		c.idx[d] = t
	}
}
