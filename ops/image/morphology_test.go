package image

import (
	"math"
	"strings"
	"testing"
)

// The windows of median_blur, dilate and erode are bounded as gaussian_blur's (issue 24):
// the error names the argument and the limit; iterations cannot overflow the window.
func TestFilterWindowBounds(t *testing.T) {
	if maxFilterWindow != 2*maxBlurRadius+1 {
		t.Fatalf("maxFilterWindow %d differs from gaussian_blur's window limit %d", maxFilterWindow, 2*maxBlurRadius+1)
	}
	for _, c := range []struct {
		v    []int64
		want string
	}{
		{[]int64{3}, ""}, {[]int64{6001, 1}, ""}, {[]int64{6003}, "larger than godali's limit (6001)"},
		{[]int64{20001, 3}, "larger than godali's limit"}, {[]int64{4}, "odd"}, {[]int64{1, 2, 3}, "(width, height)"},
		{[]int64{math.MaxInt64}, "larger than godali's limit"},
	} {
		_, msg := medianWindow(c.v)
		if (c.want == "") != (msg == "") || !strings.Contains(msg, c.want) {
			t.Errorf("medianWindow(%v) = %q, want %q", c.v, msg, c.want)
		}
	}
	for _, c := range []struct {
		m        [2]int64
		it       int64
		win      [2]int
		arg, msg string
	}{
		{[2]int64{3, 5}, 1, [2]int{3, 5}, "", ""},
		{[2]int64{3, 5}, 4, [2]int{9, 17}, "", ""},
		{[2]int64{6001, 1}, 1, [2]int{6001, 1}, "", ""},
		{[2]int64{1, 1}, math.MaxInt64, [2]int{1, 1}, "", ""}, // a 1x1 element grows nothing
		{[2]int64{3, 3}, 3000, [2]int{6001, 6001}, "", ""},
		{[2]int64{3, 3}, 3001, [2]int{}, "iterations", "larger than godali's limit (6001)"},
		{[2]int64{2, 3}, math.MaxInt64, [2]int{}, "iterations", "larger than godali's limit"},
		{[2]int64{99999, 3}, 1, [2]int{}, "mask_size", "larger than godali's limit (6001)"},
		{[2]int64{0, 3}, 1, [2]int{}, "mask_size", "1 or more"},
	} {
		win, arg, msg := morphWindow(c.m, c.it)
		if arg != c.arg || !strings.Contains(msg, c.msg) || (c.msg == "") != (msg == "") || (msg == "" && win != c.win) {
			t.Errorf("morphWindow(%v, %d) = %v, %q, %q; want %v, %q, %q", c.m, c.it, win, arg, msg, c.win, c.arg, c.msg)
		}
	}
}
