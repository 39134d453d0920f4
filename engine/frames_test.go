package engine

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
)

// frameExtremes are the integers issue 24's stride checks are fuzzed with.
var frameExtremes = []int64{-1, 0, 1, 2, 3, 1000, MaxFrame - 1, MaxFrame, MaxFrame + 1, 1 << 32, 1 << 40,
	1 << 62, math.MaxInt64, math.MinInt64}

func checkFrameSpan(t *testing.T, start, count, stride int64) {
	t.Helper()
	got, ok := FrameSpan(int(start), int(count), int(stride))
	want := new(big.Int).Mul(big.NewInt(count-1), big.NewInt(stride))
	want.Add(want, big.NewInt(start))
	wantOK := start >= 0 && count >= 1 && stride >= 0 && want.Cmp(big.NewInt(MaxFrame)) <= 0
	if ok != wantOK || (ok && int64(got) != want.Int64()) {
		t.Errorf("FrameSpan(%d, %d, %d) = %d, %v; want %s, %v", start, count, stride, got, ok, want, wantOK)
	}
}

func TestFrameSpanExtremes(t *testing.T) {
	for _, a := range frameExtremes {
		for _, b := range frameExtremes {
			for _, c := range frameExtremes {
				checkFrameSpan(t, a, b, c)
			}
		}
	}
}

func FuzzFrameSpan(f *testing.F) {
	for _, a := range frameExtremes {
		f.Add(a, a, int64(2))
		f.Add(int64(10), int64(3), a)
	}
	f.Fuzz(func(t *testing.T, start, count, stride int64) { checkFrameSpan(t, start, count, stride) })
}

// Issue 24 item 7: strides, steps, lengths and start frames that overflow the arithmetic
// they feed are argument errors at build naming the argument (readers.sequence(stride=2**62)
// was an internal error with a Go stack; readers.video called a good file truncated;
// decoders.video(start_frame=10, stride=2**63-1) reported corrupt data).
func TestFrameArgumentsBounded(t *testing.T) {
	dir := t.TempDir()
	reader := func(op, args string) string {
		return fmt.Sprintf(`{"batch_size": 1, "ops": [{"op": %q, "name": "R", "outputs": ["x"], "args": {%s}}], "outputs": ["x"]}`, op, args)
	}
	decoder := func(args string) string {
		return fmt.Sprintf(`{"batch_size": 1, "ops": [{"op": "readers.file", "name": "F", "outputs": ["b", "l"], "args": {"files": ["%s/a.mp4"]}},
		 {"op": "decoders.video", "name": "D", "inputs": ["b"], "outputs": ["x"], "args": {%s}}], "outputs": ["x"]}`, dir, args)
	}
	type frameCase struct {
		desc string
		want []string // the message names these
	}
	var cases []frameCase
	huge := []int64{MaxFrame + 1, 1 << 40, 1 << 62, math.MaxInt64}
	for _, v := range huge {
		for _, arg := range []string{"stride", "step", "sequence_length"} {
			other := `"sequence_length": 2`
			if arg == "sequence_length" {
				other = `"stride": 1`
			}
			args := fmt.Sprintf(`%s, %q: %d`, other, arg, v)
			cases = append(cases,
				frameCase{reader("readers.sequence", fmt.Sprintf(`"file_root": %q, %s`, dir, args)), []string{fmt.Sprintf("argument %q", arg), fmt.Sprint(v)}},
				frameCase{reader("readers.video", fmt.Sprintf(`"filenames": ["%s/a.mp4"], %s`, dir, args)), []string{fmt.Sprintf("argument %q", arg), fmt.Sprint(v)}})
		}
		for _, arg := range []string{"start_frame", "stride", "sequence_length"} {
			cases = append(cases, frameCase{decoder(fmt.Sprintf(`"start_frame": 10, %q: %d`, arg, v)), []string{fmt.Sprintf("argument %q", arg), fmt.Sprint(v)}})
		}
	}
	// Each value fits, their span does not.
	for _, c := range [][3]int64{{0, 1 << 16, 1 << 16}, {0, MaxFrame, 2}, {MaxFrame, 2, 1}, {10, 3, MaxFrame / 2}} {
		cases = append(cases, frameCase{decoder(fmt.Sprintf(`"start_frame": %d, "sequence_length": %d, "stride": %d`, c[0], c[1], c[2])),
			[]string{`"start_frame", "sequence_length", "stride"`, "2^31-1"}})
		if c[0] == 0 {
			cases = append(cases,
				frameCase{reader("readers.sequence", fmt.Sprintf(`"file_root": %q, "sequence_length": %d, "stride": %d`, dir, c[1], c[2])), []string{`"sequence_length", "stride"`, "2^31-1"}},
				frameCase{reader("readers.video", fmt.Sprintf(`"filenames": ["%s/a.mp4"], "sequence_length": %d, "stride": %d`, dir, c[1], c[2])), []string{`"sequence_length", "stride"`, "2^31-1"}})
		}
	}
	for _, c := range cases {
		_, err := NewPipeline([]byte(c.desc))
		if err == nil || StatusOf(err) != StatusInvalidPipeline {
			t.Errorf("%s: status %d %v; want an argument error at build", c.desc, StatusOf(err), err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %s", c.desc, err, w)
			}
		}
	}
	t.Logf("%d cases", len(cases))
}
