package readers

import (
	"fmt"
	"testing"
)

// TestExperimentalVideoPadding: DALI's documented pad modes on a sequence of 6 from
// the last 3 frames (A B C = 7 8 9) of a 10-frame video: constant ABCPPP, edge ABCCCC,
// reflect_1001 ABCCBA, reflect_101 ABCBA(9 8 7 8 ... wraps as the mirror of the video).
func TestExperimentalVideoPadding(t *testing.T) {
	for _, c := range []struct {
		pad  videoPad
		want string
	}{
		{padConstant, "[7 8 9 -1 -1 -1]"},
		{padEdge, "[7 8 9 9 9 9]"},
		{padReflect1001, "[7 8 9 9 8 7]"},
		{padReflect101, "[7 8 9 8 7 6]"},
	} {
		r := &videoReader{seqLen: 6, stride: 1, x: videoReaderOptions{on: true, pad: c.pad}}
		idx := make([]int, 6)
		r.frameIndices(idx, videoSeq{start: 7, count: 3}, 10)
		if got := fmt.Sprint(idx); got != c.want {
			t.Errorf("pad %d: %s, want %s", c.pad, got, c.want)
		}
	}
	r := &videoReader{seqLen: 5, x: videoReaderOptions{on: true, uniform: true}}
	idx := make([]int, 5)
	r.frameIndices(idx, videoSeq{start: 0, count: 3}, 3)
	if got := fmt.Sprint(idx); got != "[0 1 1 2 2]" { // DALI's documented example
		t.Errorf("uniform 5 of 3: %s", got)
	}
}

// TestExperimentalVideoSequenceStarts: a sequence needs seqLen * stride frames (DALI
// counts the stride after the last frame too); with padding, one more starts where the
// full ones stop, if that is inside the video (these starts are DALI 2.4's, read back from
// its CPU reader on 10- and 7-frame clips).
func TestExperimentalVideoSequenceStarts(t *testing.T) {
	starts := func(x videoReaderOptions, n, seqLen, step, stride int) string {
		var s []int32
		for _, q := range x.sequenceStarts(nil, 0, 0, n, seqLen, step, stride) {
			s = append(s, q.start)
		}
		return fmt.Sprint(s)
	}
	none, pad := videoReaderOptions{}, videoReaderOptions{pad: padConstant}
	for _, c := range []struct {
		x                       videoReaderOptions
		n, seqLen, step, stride int
		want                    string
	}{
		{none, 10, 2, 1, 3, "[0 1 2 3 4]"},
		{none, 10, 4, 3, 2, "[0]"},
		{pad, 10, 4, 3, 2, "[0 3]"},
		{pad, 10, 3, 4, 2, "[0 4 8]"},
		{pad, 10, 4, 6, 1, "[0 6]"},
		{pad, 7, 4, 6, 1, "[0 6]"},
		{pad, 10, 2, 1, 3, "[0 1 2 3 4 5]"},
		{pad, 3, 10, 1, 1, "[0]"},
	} {
		if got := starts(c.x, c.n, c.seqLen, c.step, c.stride); got != c.want {
			t.Errorf("%+v: %s, want %s", c, got, c.want)
		}
	}
}
