package readers

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/lmdb"
)

// Issue 16 item 1: corrupt LMDB databases killed the host (SIGBUS on a truncated
// data.mdb, a Go fault on a leaf node claiming 100 MB, liblmdb's assertion on meta
// roots of 0, an internal error on a 4 GB value). This test writes a corpus of
// corrupted Caffe and Caffe2 databases and reads each through a pipeline in a child
// process under an address-space limit, in on_error raise and skip modes: the child
// must exit normally, and every error must be a data error naming the database.

const (
	corruptChildEnv = "GODALI_LMDB_CORRUPT_CHILD"
	corruptASLimit  = 3 << 30 // bytes of address space the child may map
)

type corruptCase struct {
	Dir      string `json:"dir"`
	Op       string `json:"op"`
	Args     string `json:"args"`
	Outputs  int    `json:"outputs"`
	MustFail bool   `json:"must_fail"`
}

type corruptOutcome struct {
	Errors  []string `json:"errors"`  // each error, "status|message"
	Batches int      `json:"batches"` // batches that came back
}

// corruptDBs writes the corpus under dir from the good databases and returns it.
func corruptDBs(t *testing.T, dir string, goods []corruptCase) []corruptCase {
	var out []corruptCase
	rng := rand.New(rand.NewSource(1116))
	for gi, g := range goods {
		good, err := os.ReadFile(filepath.Join(g.Dir, "data.mdb"))
		if err != nil {
			t.Fatal(err)
		}
		psize := int(binary.LittleEndian.Uint32(good[40:]))
		db, err := lmdb.Open(g.Dir)
		if err != nil {
			t.Fatal(err)
		}
		var inline, big lmdb.Record
		node := func(b []byte, r lmdb.Record) int {
			base := int(r.Page) * psize
			return base + int(binary.LittleEndian.Uint16(b[base+16+2*r.Index:]))
		}
		recs := db.Records()
		for _, r := range recs {
			if binary.LittleEndian.Uint16(good[node(good, r)+4:])&1 != 0 {
				big = r
			} else if inline.Key == nil {
				inline = r
			}
		}
		db.Close()
		if inline.Key == nil || big.Key == nil {
			t.Fatalf("%s: the good database needs an inline and an overflow value", g.Dir)
		}
		add := func(name string, mustFail bool, b []byte) {
			c := g
			c.Dir = filepath.Join(dir, fmt.Sprintf("%d_%03d_%s", gi, len(out), name))
			c.MustFail = mustFail
			if err := os.MkdirAll(c.Dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(c.Dir, "data.mdb"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		mod := func(f func(b []byte)) []byte {
			b := append([]byte(nil), good...)
			f(b)
			return b
		}
		setSize := func(b []byte, r lmdb.Record, size uint32) {
			o := node(b, r)
			binary.LittleEndian.PutUint16(b[o:], uint16(size))
			binary.LittleEndian.PutUint16(b[o+2:], uint16(size>>16))
		}
		for i := 0; i < 24; i++ { // truncations, from 0 bytes to one byte short
			n := len(good) * i / 24
			if i%3 == 1 {
				n = n/psize*psize + psize/2
			}
			add("trunc"+strconv.Itoa(n), true, good[:min(n, len(good)-1)])
		}
		add("leaf_node_100MB", true, mod(func(b []byte) { setSize(b, inline, 100<<20) }))
		add("overflow_node_100MB", true, mod(func(b []byte) { setSize(b, big, 100<<20) }))
		add("value_4GB", true, mod(func(b []byte) { setSize(b, big, 0xffffffff) }))
		add("meta_roots_0", true, mod(func(b []byte) {
			binary.LittleEndian.PutUint64(b[128:], 0)
			binary.LittleEndian.PutUint64(b[psize+128:], 0)
		}))
		// Random byte flips: in a meta page's header, in a tree page, or anywhere.
		treePages := []int{int(binary.LittleEndian.Uint64(good[psize+128:]))}
		for _, r := range recs {
			treePages = append(treePages, int(r.Page))
		}
		for i := 0; i < 40; i++ {
			add("flip"+strconv.Itoa(i), false, mod(func(b []byte) {
				for j := 0; j < 1+i%3; j++ {
					var at int
					switch i % 3 {
					case 0:
						at = rng.Intn(2)*psize + rng.Intn(16+152)
					case 1:
						at = treePages[rng.Intn(len(treePages))]*psize + rng.Intn(psize)
					default:
						at = rng.Intn(len(b))
					}
					b[at] ^= byte(1 + rng.Intn(255))
				}
			}))
		}
	}
	return out
}

func TestCaffeCorruptLMDBInChild(t *testing.T) {
	files := someFiles(t, 4)
	for i, n := range []int{3000, 9000, 40000} { // values on overflow pages
		p := filepath.Join(t.TempDir(), fmt.Sprintf("big%d.jpg", i))
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	goods := []corruptCase{
		{Dir: filepath.Join(t.TempDir(), "caffe_db"), Op: "readers.caffe", Args: `{}`, Outputs: 2},
		{Dir: filepath.Join(t.TempDir(), "caffe2_db"), Op: "readers.caffe2", Args: `{"additional_inputs": 1}`, Outputs: 3},
	}
	caffeRef(t, "caffe", goods[0].Dir, files)
	caffeRef(t, "caffe2", goods[1].Dir, files)
	cases := corruptDBs(t, t.TempDir(), goods)
	cases = append(goods, cases...)
	manifest := filepath.Join(t.TempDir(), "cases.json")
	mb, _ := json.Marshal(cases)
	if err := os.WriteFile(manifest, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCaffeCorruptChild$", "-test.v")
	cmd.Env = append(os.Environ(), corruptChildEnv+"="+manifest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process crashed (%v): 0 crashes wanted\n%s", err, tail(out, 4000))
	}
	var res struct {
		Raise, Skip []corruptOutcome
		VmHWM       int64
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			if err := json.Unmarshal([]byte(l), &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(res.Raise) != len(cases) || len(res.Skip) != len(cases) {
		t.Fatalf("child reported %d/%d of %d cases\n%s", len(res.Raise), len(res.Skip), len(cases), tail(out, 4000))
	}
	failed := 0
	for i, c := range cases {
		for mode, o := range map[string]corruptOutcome{"raise": res.Raise[i], "skip": res.Skip[i]} {
			for _, e := range o.Errors {
				st, msg, _ := strings.Cut(e, "|")
				if st != strconv.Itoa(int(engine.StatusData)) || !strings.Contains(msg, c.Dir) {
					t.Errorf("%s, on_error %s: not a data error naming the database: status %s: %s", c.Dir, mode, st, msg)
				}
			}
		}
		if i < len(goods) && (len(res.Raise[i].Errors) != 0 || len(res.Skip[i].Errors) != 0) {
			t.Errorf("%s: the good database failed: %v %v", c.Dir, res.Raise[i].Errors, res.Skip[i].Errors)
		}
		if c.MustFail && len(res.Raise[i].Errors) == 0 {
			t.Errorf("%s: read without an error", c.Dir)
		}
		if len(res.Raise[i].Errors) > 0 {
			failed++
		}
	}
	if res.VmHWM <= 0 || res.VmHWM > 1<<30 {
		t.Errorf("child peak RSS %d bytes, want (0, 1 GiB]", res.VmHWM)
	}
	t.Logf("%d corrupted databases (+%d good) through readers.caffe/caffe2 under RLIMIT_AS %d GiB: 0 crashes, %d failed cleanly, child VmHWM %.1f MiB",
		len(cases)-len(goods), len(goods), corruptASLimit>>30, failed, float64(res.VmHWM)/(1<<20))
}

// TestCaffeCorruptChild is the child side of TestCaffeCorruptLMDBInChild.
func TestCaffeCorruptChild(t *testing.T) {
	manifest := os.Getenv(corruptChildEnv)
	if manifest == "" {
		t.Skip("runs as the child of TestCaffeCorruptLMDBInChild")
	}
	lim := syscall.Rlimit{Cur: corruptASLimit, Max: corruptASLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var cases []corruptCase
	if err := json.Unmarshal(mb, &cases); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Raise, Skip []corruptOutcome
		VmHWM       int64
	}
	for _, c := range cases {
		res.Raise = append(res.Raise, readCorrupt(c, "raise", 1))
		res.Skip = append(res.Skip, readCorrupt(c, "skip", 4))
	}
	res.VmHWM = procStatus("VmHWM")
	b, _ := json.Marshal(res)
	fmt.Printf("RESULT %s\n", b)
}

// readCorrupt reads one epoch of c's database and collects the errors.
func readCorrupt(c corruptCase, onError string, batch int) (o corruptOutcome) {
	fail := func(err error) { o.Errors = append(o.Errors, fmt.Sprintf("%d|%v", engine.StatusOf(err), err)) }
	var args map[string]any
	_ = json.Unmarshal([]byte(c.Args), &args)
	args["path"] = c.Dir
	ab, _ := json.Marshal(args)
	var names []string
	for i := 0; i < c.Outputs; i++ {
		names = append(names, fmt.Sprintf(`"o%d"`, i))
	}
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "device_id": null, "seed": 1, "on_error": %q,
	  "ops": [{"op": %q, "name": "R", "outputs": [%s], "args": %s}], "outputs": [%s]}`,
		batch, onError, c.Op, strings.Join(names, ","), ab, strings.Join(names, ","))
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		fail(err)
		return o
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		fail(err)
		return o
	}
	for i := 0; i < 64; i++ {
		_, err := p.Next()
		if errors.Is(err, engine.ErrEndOfEpoch) {
			break
		}
		if err != nil {
			fail(err)
			continue
		}
		o.Batches++
	}
	return o
}

func procStatus(key string) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			f := strings.Fields(v)
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n * 1024
		}
	}
	return -1
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
