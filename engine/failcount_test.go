package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// One bad file in a folder of good ones (issue 24, item 8): the batch's error counts
// the failed samples as they are. Copies of the bad file in one batch (the padding of
// the epoch's last batch, or a shuffled epoch starting with the file the last one ended
// with) are named as copies, not as "more failed samples"; and under on_error="skip" the
// same batch loses exactly those copies, every other sample being kept.
func TestOneBadFileCountsOneFailedSample(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 32; i++ {
		writeJPEG(t, filepath.Join(dir, "c", fmt.Sprintf("%02d.jpg", i)), 24, 16, i)
	}
	// Named to sort last: without shuffling it is the epoch's last sample.
	bad := filepath.Join(dir, "c", "zz_bad.jpg")
	if err := os.WriteFile(bad, []byte("this is not an image, just text of some length"), 0o644); err != nil {
		t.Fatal(err)
	}
	desc := func(onError string, threads int, pad, shuffle bool, seed int) string {
		return fmt.Sprintf(`{"batch_size": 16, "num_threads": %d, "seed": %d, "on_error": %q, "ops": [
			{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"file_root": %q, "pad_last_batch": %t, "random_shuffle": %t, "initial_fill": 40}},
			{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]}],
			"outputs": ["img", "l"]}`, threads, seed, onError, dir, pad, shuffle)
	}
	copiesRE := regexp.MustCompile(`the same file fails at (\d+) more place`)

	// Unshuffled with pad_last_batch: the third batch is the bad file and 15 copies.
	p := mustPipeline(t, desc("raise", 2, true, false, 1))
	for i := 0; i < 2; i++ {
		if _, err := p.Next(); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	_, err := p.Next()
	if err == nil || StatusOf(err) != StatusData || !strings.Contains(err.Error(), "zz_bad.jpg") {
		t.Fatalf("padded last batch: want a data error naming zz_bad.jpg, got %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "more failed samples") ||
		!strings.Contains(msg, "fails at 15 more places of this batch, past the end of the epoch") {
		t.Fatalf("padded last batch: %s", msg)
	}

	// Without padding the batch goes on into the next epoch: one failed sample.
	p = mustPipeline(t, desc("raise", 3, false, false, 1))
	for i := 0; i < 2; i++ {
		if _, err := p.Next(); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if _, err = p.Next(); err == nil || strings.Contains(err.Error(), "more") {
		t.Fatalf("stream: want one failed sample, got %v", err)
	}
	if _, err := p.Next(); !errors.Is(err, ErrEndOfEpoch) {
		t.Fatalf("after the epoch's last batch: %v", err)
	}
	p.Reset()
	if b, err := p.Next(); err != nil || b.Epoch != 1 {
		t.Fatalf("the batch after the failed one: %v", err)
	}

	// Shuffled, 50 runs of 4 epochs with 2-4 threads: every failed batch names one
	// failed sample and its copies; the same run under "skip" replaces exactly that many
	// samples of the same batch (or, when the batch holds nothing but the bad file,
	// fails it).
	copiesSeen := 0
	for run := 0; run < 50; run++ {
		threads, pad := 2+run%3, run%2 == 0
		pr := mustPipeline(t, desc("raise", threads, pad, true, 100+run))
		ps := mustPipeline(t, desc("skip", threads, pad, true, 100+run))
		for it := 0; it < 9; it++ {
			_, rerr := pr.Next()
			sb, serr := ps.Next()
			if errors.Is(rerr, ErrEndOfEpoch) != errors.Is(serr, ErrEndOfEpoch) {
				t.Fatalf("run %d batch %d: raise %v, skip %v", run, it, rerr, serr)
			}
			if errors.Is(rerr, ErrEndOfEpoch) {
				pr.Reset()
				ps.Reset()
				continue
			}
			if rerr == nil {
				if serr != nil || sb.Skipped != 0 {
					t.Fatalf("run %d batch %d: raise ok, skip %v / %d skipped", run, it, serr, sb.Skipped)
				}
				continue
			}
			msg := rerr.Error()
			if !strings.Contains(msg, "zz_bad.jpg") || strings.Contains(msg, "more failed samples") {
				t.Fatalf("run %d batch %d: %s", run, it, msg)
			}
			n := 1
			if m := copiesRE.FindStringSubmatch(msg); m != nil {
				c, _ := strconv.Atoi(m[1])
				n += c
				copiesSeen++
			}
			switch {
			case serr != nil:
				if n != 16 {
					t.Fatalf("run %d batch %d: %d of 16 samples failed, yet skip failed the batch: %v", run, it, n, serr)
				}
			case int(sb.Skipped) != n || len(sb.Skips) != n:
				t.Fatalf("run %d batch %d: raise counts %d failed samples (%s), skip replaced %d", run, it, n, msg, sb.Skipped)
			default:
				for _, sk := range sb.Skips {
					if sk.File != bad {
						t.Fatalf("run %d batch %d: skipped %+v", run, it, sk)
					}
				}
			}
		}
		pr.Close()
		ps.Close()
	}
	if copiesSeen == 0 {
		t.Fatal("no failed batch held copies of the bad file: the loop does not test the count")
	}
}
