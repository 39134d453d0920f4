package image

import "testing"

// TestDebayerBilinearReproducesPlanes: bilinear demosaicing is exact (to the rounding of
// one half) on images whose colour planes are linear in x and y, at every inner pixel and
// for all four Bayer tiles; the border rows and columns repeat their inner neighbours and
// every site keeps its own sensor value.
func TestDebayerBilinearReproducesPlanes(t *testing.T) {
	const h, w = 8, 10
	plane := func(c, y, x int) int32 { return int32(40*c + 3*y + 7*x + 5*c*x) }
	for _, bp := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
		by, bx := (bp[0]+1)%2, (bp[1]+1)%2
		colour := func(y, x int) int {
			switch {
			case y%2 == by && x%2 == bx:
				return 2
			case y%2 != by && x%2 != bx:
				return 0
			}
			return 1
		}
		src := make([]int32, h*w)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				src[y*w+x] = plane(colour(y, x), y, x)
			}
		}
		dst := make([]int32, 3*h*w)
		DebayerBilinear(dst, src, h, w, bp)
		for y := 1; y < h-1; y++ {
			for x := 1; x < w-1; x++ {
				for c := 0; c < 3; c++ {
					got, want := dst[(y*w+x)*3+c], plane(c, y, x)
					if d := got - want; d < 0 || d > 1 {
						t.Fatalf("tile %v: (%d, %d, %d) = %d, want %d (+1 for rounding half up)", bp, y, x, c, got, want)
					}
					if c == colour(y, x) && got != src[y*w+x] {
						t.Fatalf("tile %v: site (%d, %d) changed its own colour %d: %d -> %d", bp, y, x, c, src[y*w+x], got)
					}
				}
			}
		}
		px := func(y, x int) [3]int32 { i := (y*w + x) * 3; return [3]int32{dst[i], dst[i+1], dst[i+2]} }
		for y := 0; y < h; y++ {
			iy := min(max(y, 1), h-2)
			for x := 0; x < w; x++ {
				ix := min(max(x, 1), w-2)
				if px(y, x) != px(iy, ix) {
					t.Fatalf("tile %v: border (%d, %d) = %v, want its inner neighbour (%d, %d) %v", bp, y, x, px(y, x), iy, ix, px(iy, ix))
				}
			}
		}
	}
}

func TestBluePositionRejectsOutOfTile(t *testing.T) {
	for _, v := range [][]int{{0}, {0, 2}, {-1, 0}, {0, 0, 0}} {
		if _, msg := bluePosition(v); msg == "" {
			t.Errorf("blue_position %v accepted", v)
		}
	}
	if p, msg := bluePosition([]int{1, 0}); msg != "" || p != [2]int{1, 0} {
		t.Errorf("blue_position [1 0]: %v %q", p, msg)
	}
}

// TestDebayerGrayOfFlatColour: a scene of one colour (R, G, B) seen through any Bayer
// tile has the luma round(0.299 R + 0.587 G + 0.114 B) (OpenCV's 14-bit weights) at every
// pixel, borders included.
func TestDebayerGrayOfFlatColour(t *testing.T) {
	const h, w = 6, 8
	rgb := [3]int32{200, 90, 30}
	want := (int64(rgb[0])*bayerR2Y + int64(rgb[1])*bayerG2Y + int64(rgb[2])*bayerB2Y + 1<<13) >> 14
	for _, bp := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
		by, bx := (bp[0]+1)%2, (bp[1]+1)%2
		src := make([]int32, h*w)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				switch {
				case y%2 == by && x%2 == bx:
					src[y*w+x] = rgb[2]
				case y%2 != by && x%2 != bx:
					src[y*w+x] = rgb[0]
				default:
					src[y*w+x] = rgb[1]
				}
			}
		}
		dst := make([]int32, h*w)
		DebayerGray(dst, src, h, w, bp)
		for i, v := range dst {
			if int64(v) != want {
				t.Fatalf("tile %v: pixel %d = %d, want %d", bp, i, v, want)
			}
		}
	}
}

// TestDebayerEdgeAwareFollowsEdges: across a vertical edge (dark columns, then bright
// ones) the edge-aware green at a red or blue site comes from the vertical pair, the
// same side of the edge, where the bilinear green mixes both sides.
func TestDebayerEdgeAwareFollowsEdges(t *testing.T) {
	const h, w = 6, 8
	src := make([]int32, h*w)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			src[y*w+x] = 10
			if x >= 4 {
				src[y*w+x] = 200
			}
		}
	}
	ea, bl := make([]int32, 3*h*w), make([]int32, 3*h*w)
	bp := [2]int{0, 0} // red at even rows and columns
	DebayerEdgeAware(ea, src, h, w, bp)
	DebayerBilinear(bl, src, h, w, bp)
	// (2, 4) is a red site at the first bright column: its left neighbour is dark.
	if g := ea[(2*w+4)*3+1]; g != 200 {
		t.Errorf("edge-aware green at the edge = %d, want 200 (from above and below)", g)
	}
	if g := bl[(2*w+4)*3+1]; g == 200 {
		t.Errorf("bilinear green at the edge = 200: the test image has no edge to follow")
	}
	// Away from edges both agree.
	for _, i := range []int{(2*w + 2) * 3, (3*w + 6) * 3} {
		for c := 0; c < 3; c++ {
			if ea[i+c] != bl[i+c] {
				t.Errorf("flat area: edge-aware %d, bilinear %d (value %d, channel %d)", ea[i+c], bl[i+c], i/3, c)
			}
		}
	}
}
