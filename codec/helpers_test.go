package codec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// corpusDir holds the real-world images (Pillow and libjpeg-turbo test images, with
// their licences) and MANIFEST.tsv, what PIL 9.4 makes of each.
const corpusDir = "../tests/data/corpus"

type manifestEntry struct {
	path   string // relative to corpusDir
	format string // PIL's format name, "" when PIL failed
	mode   string
	w, h   int
	ok     bool
	pilErr string
}

func readManifest(t testing.TB) []manifestEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatalf("corpus manifest: %v", err)
	}
	defer f.Close()
	var out []manifestEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 4 {
			continue
		}
		e := manifestEntry{path: cols[0]}
		if cols[3] == "ok" {
			e.ok = true
			fields := strings.Fields(cols[2]) // "JPEG RGB 256x160 progressive"
			if len(fields) < 3 {
				t.Fatalf("manifest line %q: cannot read format, mode and size", sc.Text())
			}
			e.format, e.mode = fields[0], fields[1]
			if _, err := fmt.Sscanf(fields[2], "%dx%d", &e.w, &e.h); err != nil {
				t.Fatalf("manifest line %q: %v", sc.Text(), err)
			}
		} else {
			e.pilErr = cols[3]
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatal("empty corpus manifest")
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pilJob asks the Python helper for PIL's decode of one file.
type pilJob struct {
	Path      string `json:"path"`
	Mode      string `json:"mode"` // "RGB" or "L"
	Transpose bool   `json:"transpose"`
	Draft     []int  `json:"draft,omitempty"` // JPEG DCT scaling to at least this size
}

type pilResult struct {
	OK          bool   `json:"ok"`
	W           int    `json:"w"`
	H           int    `json:"h"`
	C           int    `json:"c"`
	Orientation int    `json:"orientation"` // 0 when PIL found none
	Err         string `json:"err"`
	Pix         []byte `json:"-"`
}

// systemPython is the project's Python (internal/pyref), with Debian's PIL.
var systemPython = pyref.Python()

var (
	pilOnce      sync.Once
	pilAvailable bool
)

// requirePIL skips the test when Debian's python3 with PIL is not installed.
func requirePIL(t testing.TB) {
	t.Helper()
	pilOnce.Do(func() {
		if _, err := os.Stat(systemPython); err != nil {
			return
		}
		pilAvailable = exec.Command(systemPython, "-c", "import PIL.Image, PIL.ImageOps").Run() == nil
	})
	if !pilAvailable {
		testref.Missing(t, "needs %s with PIL for reference decodes", systemPython)
	}
}

// pilDecode runs testdata/pil_decode.py once for all jobs.
func pilDecode(t testing.TB, jobs []pilJob) []pilResult {
	t.Helper()
	requirePIL(t)
	dir := t.TempDir()
	in, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(systemPython, "testdata/pil_decode.py", dir)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pil_decode.py: %v\n%s", err, stderr.String())
	}
	var res []pilResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pil_decode.py output: %v", err)
	}
	if len(res) != len(jobs) {
		t.Fatalf("pil_decode.py answered %d of %d jobs", len(res), len(jobs))
	}
	for i := range res {
		if res[i].OK {
			res[i].Pix = readFile(t, filepath.Join(dir, fmt.Sprintf("%d.raw", i)))
			if len(res[i].Pix) != res[i].W*res[i].H*res[i].C {
				t.Fatalf("pil_decode.py job %d: %d bytes for %dx%dx%d", i, len(res[i].Pix), res[i].W, res[i].H, res[i].C)
			}
		}
	}
	return res
}

// diffStats compares two equally sized pixel buffers.
type diffStats struct {
	max  int
	mean float64
	at   int // index of the first maximal difference
}

func compare(a, b []byte) diffStats {
	var s diffStats
	var sum int
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		sum += d
		if d > s.max {
			s.max, s.at = d, i
		}
	}
	if len(a) > 0 {
		s.mean = float64(sum) / float64(len(a))
	}
	return s
}

// decodeAll is Probe + OutputSize + Decode into a fresh buffer.
func decodeAll(d *Decoder, data []byte, opt Options) (pix []byte, w, h, c int, info Info, err error) {
	info, err = d.Probe(data)
	if err != nil {
		return nil, 0, 0, 0, info, err
	}
	w, h, c, err = d.OutputSize(data, info, opt)
	if err != nil {
		return nil, 0, 0, 0, info, err
	}
	pix = make([]byte, w*h*c)
	gw, gh, gc, err := d.Decode(data, info, opt, pix)
	if err != nil {
		return nil, 0, 0, 0, info, err
	}
	if gw != w || gh != h || gc != c {
		return nil, 0, 0, 0, info, fmt.Errorf("Decode returned %dx%dx%d, OutputSize said %dx%dx%d", gw, gh, gc, w, h, c)
	}
	return pix, w, h, c, info, nil
}

// window copies the rectangle r out of an HWC image of width w.
func window(pix []byte, w, c int, r Rect) []byte {
	out := make([]byte, 0, r.W*r.H*c)
	for y := r.Y; y < r.Y+r.H; y++ {
		out = append(out, pix[(y*w+r.X)*c:(y*w+r.X+r.W)*c]...)
	}
	return out
}
