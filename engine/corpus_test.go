package engine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/internal/testref"
)

// TestCorpusThroughPipeline runs every real-world test image (Pillow's and
// libjpeg-turbo's, tests/data/corpus) through one pipeline: each decodes to the size PIL
// reports or fails with an error naming the file, and the pipeline keeps going.
func TestCorpusThroughPipeline(t *testing.T) {
	dir := filepath.Join("..", "tests", "data", "corpus")
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		testref.Missing(t, "corpus not present: %v", err)
	}
	defer f.Close()
	type entry struct {
		path  string
		w, h  int
		pilOK bool
		mode  string
	}
	var entries []entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 4 {
			continue
		}
		p := filepath.Join(dir, cols[0])
		if _, err := os.Stat(p); err != nil {
			continue // not copied into the repo
		}
		e := entry{path: p, pilOK: cols[3] == "ok"}
		if fs := strings.Fields(cols[2]); len(fs) >= 3 {
			e.mode = fs[1]
			fmt.Sscanf(fs[2], "%dx%d", &e.w, &e.h)
		}
		entries = append(entries, e)
	}
	if len(entries) < 20 {
		t.Fatalf("only %d corpus files found", len(entries))
	}
	files := make([]string, len(entries))
	for i, e := range entries {
		files[i] = fmt.Sprintf("%q", e.path)
	}
	p := mustPipeline(t, fmt.Sprintf(`{"batch_size": 1, "num_threads": 2, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%s]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"], "args": {"adjust_orientation": false}}],
		"outputs": ["img"]}`, strings.Join(files, ",")))
	decoded, failed := 0, 0
	for i, e := range entries {
		b, err := p.Next()
		if errors.Is(err, ErrEndOfEpoch) {
			t.Fatalf("epoch ended after %d of %d files", i, len(entries))
		}
		name := filepath.Base(e.path)
		if err != nil {
			failed++
			if StatusOf(err) != StatusData || !strings.Contains(err.Error(), name) {
				t.Errorf("%s: error does not name the file or is not a data error: %v", name, err)
			}
			if e.pilOK {
				t.Errorf("%s: PIL decodes it (%s %dx%d) but godali failed: %v", name, e.mode, e.w, e.h, err)
			}
			continue
		}
		decoded++
		s := b.Output(0).SampleShape(0)
		if e.pilOK && (s[0] != e.h || s[1] != e.w) {
			t.Errorf("%s: decoded %dx%d, PIL says %dx%d", name, s[1], s[0], e.w, e.h)
		}
	}
	if _, err := p.Next(); !errors.Is(err, ErrEndOfEpoch) {
		t.Errorf("want end of epoch after the corpus, got %v", err)
	}
	t.Logf("corpus: %d decoded, %d failed cleanly", decoded, failed)
}
