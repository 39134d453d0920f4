package remote_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/source/remote"
)

// Issue 24, item 5, against moto: readers.file over URLs presigned by the AWS SDK. The
// checkpoint and the disk cache hold none of their secrets (signature, credential), and
// the checkpoint restores into a pipeline whose URLs were presigned again (another
// expiry: another signature).
func TestPresignedURLsCheckpointAndCache(t *testing.T) {
	endpoint := remote.MotoServer(t)
	remote.S3Env(t, endpoint)
	bucket := "presign" + strings.ReplaceAll(strings.ToLower(remote.TestName(t)), "-", "")
	objects := map[string][]byte{}
	for i := 0; i < 8; i++ {
		objects[fmt.Sprintf("d/f%d.bin", i)] = []byte(fmt.Sprintf("object %d", i))
	}
	remote.PutObjects(t, endpoint, bucket, objects)
	cacheDir := t.TempDir()
	var secrets []string
	desc := func(expires time.Duration) string {
		var urls []string
		for i := 0; i < 8; i++ {
			u := remote.PresignGet(t, endpoint, bucket, fmt.Sprintf("d/f%d.bin", i), expires)
			q, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"X-Amz-Signature", "X-Amz-Credential"} {
				v := q.Query().Get(k)
				if len(v) < 16 {
					t.Fatalf("presigned URL %s has no %s", u, k)
				}
				secrets = append(secrets, v, url.QueryEscape(v))
			}
			urls = append(urls, u)
		}
		return fmt.Sprintf(`{"batch_size": 2, "num_threads": 2, "seed": 9, "enable_checkpointing": true, "ops": [
			{"op": "readers.file", "name": "R", "outputs": ["a", "b"], "args": {"files": %s, "random_shuffle": true, "initial_fill": 3, "cache_dir": %q}}],
			"outputs": ["a", "b"]}`, quoted(urls), cacheDir)
	}
	noSecret := func(what string, b []byte) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Fatalf("%s holds a secret of a presigned URL (%.12s...)", what, s)
			}
		}
	}
	run := func(p *engine.Pipeline) string {
		b, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for i := 0; i < b.Output(0).NumSamples(); i++ {
			v, err := b.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			n := v.DType.Size()
			for _, e := range v.Shape {
				n *= int(e)
			}
			fmt.Fprintf(&sb, "%q\n", unsafe.Slice((*byte)(v.Ptr), n))
			v.Lease.Release()
		}
		return sb.String()
	}
	newPipe := func(desc string, cp []byte) *engine.Pipeline {
		p, err := engine.NewPipeline([]byte(desc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		if cp != nil {
			if err := p.Restore(cp); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Build(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := newPipe(desc(10*time.Minute), nil)
	run(p)
	run(p)
	cp, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	noSecret("the checkpoint", cp)
	want := run(p)
	q := newPipe(desc(20*time.Minute), cp)
	if got := run(q); got != want {
		t.Fatalf("restored after presigning again:\n%s\nwant\n%s", got, want)
	}
	ents, err := os.ReadDir(cacheDir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("cache_dir: %d entries, %v", len(ents), err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(cacheDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		noSecret("cache entry "+e.Name(), b)
	}
}
