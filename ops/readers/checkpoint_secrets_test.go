package readers_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/godali/godali/engine"
)

// signedURL is base+path as each kind of credential or signature makes it; version
// stands for a new signature (new secrets, date and expiry) of the same object. Every
// secret value holds "SECRET".
func signedURL(kind, base, path string, version int) string {
	v := fmt.Sprintf("v%d-SECRET", version)
	switch kind {
	case "password":
		return strings.Replace(base, "http://", "http://alice:PW-"+v+"@", 1) + path
	case "user-token":
		return strings.Replace(base, "http://", "http://TOKEN-"+v+"@", 1) + path
	case "s3-presigned":
		return base + path + "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA-" + v + "%2F20261124%2Fus-east-1%2Fs3%2Faws4_request" +
			fmt.Sprintf("&X-Amz-Date=2026112%dT000000Z&X-Amz-Expires=%d", version, 600*version) +
			"&X-Amz-SignedHeaders=host&X-Amz-Security-Token=STS-" + v + "&X-Amz-Signature=SIG-" + v
	case "s3-v2":
		return base + path + fmt.Sprintf("?AWSAccessKeyId=AKIA-%s&Expires=%d&Signature=SIG-%s", v, 1700000000+version, v)
	case "gcs-signed":
		return base + path + "?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=SA-" + v + "%2F20261124%2Fauto%2Fstorage%2Fgoog4_request" +
			fmt.Sprintf("&X-Goog-Date=2026112%dT000000Z&X-Goog-Expires=%d", version, 900*version) +
			"&X-Goog-SignedHeaders=host&X-Goog-Signature=SIG-" + v
	case "azure-sas":
		return base + path + fmt.Sprintf("?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-0%dT00:00:00Z&st=2026-11-0%dT00:00:00Z&spr=https&sig=SIG-%s%%3D", version, version, v)
	case "generic":
		return base + path + "?token=T-" + v + "&access_token=AT-" + v + "&key=K-" + v + "&password=P-" + v + "&apikey=AK-" + v
	}
	panic(kind)
}

// dumpOutputs is the bytes and shapes of the batch's outputs ks.
func dumpOutputs(t *testing.T, b *engine.Batch, ks ...int) string {
	t.Helper()
	var sb strings.Builder
	for _, k := range ks {
		o := b.Output(k)
		for i := 0; i < o.NumSamples(); i++ {
			v, err := o.SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			n := v.DType.Size()
			for _, e := range v.Shape {
				n *= int(e)
			}
			fmt.Fprintf(&sb, "%d/%d %v %q\n", k, i, o.SampleShape(i), unsafe.Slice((*byte)(v.Ptr), n))
			v.Lease.Release()
		}
	}
	return sb.String()
}

// Issue 24, item 5: a checkpoint of a reader of URLs with credentials or signatures
// holds none of them, nor does source_info; it restores into a pipeline whose URLs were
// signed again (new secrets, dates and expiries), and is refused, naming the differing
// object without its secrets, when a URL names another object.
func TestCheckpointHoldsNoURLSecretsAndSurvivesResigning(t *testing.T) {
	files := map[string][]byte{}
	for i := 0; i < 12; i++ {
		files[fmt.Sprintf("/d/f%02d.bin", i)] = []byte(fmt.Sprintf("bytes of file %d", i))
	}
	files["/d/other.bin"] = []byte("another object")
	srv := fileServer(t, files, nil)
	desc := func(kind string, version int, rename bool) string {
		var urls []string
		for i := 0; i < 12; i++ {
			p := fmt.Sprintf("/d/f%02d.bin", i)
			if rename && i == 3 {
				p = "/d/other.bin"
			}
			urls = append(urls, signedURL(kind, srv.URL, p, version))
		}
		return fmt.Sprintf(`{"batch_size": 4, "num_threads": 2, "seed": 5, "enable_checkpointing": true, "ops": [
			{"op": "readers.file", "name": "R", "outputs": ["data", "label"], "args": {"files": %s, "random_shuffle": true, "initial_fill": 6}},
			{"op": "get_property", "name": "src", "inputs": ["data"], "outputs": ["info"], "args": {"key": "source_info"}}],
			"outputs": ["data", "label", "info"]}`, quoted(urls))
	}
	for _, kind := range []string{"password", "user-token", "s3-presigned", "s3-v2", "gcs-signed", "azure-sas", "generic"} {
		t.Run(kind, func(t *testing.T) {
			p := build(t, desc(kind, 1, false), nil)
			for i := 0; i < 2; i++ {
				b, err := p.Next()
				if err != nil {
					t.Fatal(err)
				}
				info := dumpOutputs(t, b, 2)
				if strings.Contains(info, "SECRET") || !strings.Contains(info, "/d/f") {
					t.Fatalf("source_info: %s", info)
				}
			}
			cp, err := p.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(cp), "SECRET") || !strings.Contains(string(cp), "/d/f03.bin") {
				t.Fatalf("checkpoint:\n%s", cp)
			}
			b, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			want := dumpOutputs(t, b, 0, 1)

			// Signed again: the same objects, resumed where the checkpoint was.
			q := build(t, desc(kind, 2, false), cp)
			b, err = q.Next()
			if err != nil {
				t.Fatal(err)
			}
			if got := dumpOutputs(t, b, 0, 1); got != want {
				t.Fatalf("restored after signing again:\n%s\nwant\n%s", got, want)
			}
			// Another object: refused, naming both without secrets.
			r, err := engine.NewPipeline([]byte(desc(kind, 2, true)))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			err = r.Restore(cp)
			if err == nil {
				t.Fatal("restored a checkpoint whose file 3 is another object")
			}
			msg := err.Error()
			if strings.Contains(msg, "SECRET") || !strings.Contains(msg, `entry 3 of argument "files" of reader "R"`) ||
				!strings.Contains(msg, srv.URL+`/d/f03.bin" in the checkpoint`) || !strings.Contains(msg, srv.URL+`/d/other.bin" in this pipeline`) {
				t.Fatalf("refusal: %s", msg)
			}
			t.Logf("refusal: %s", msg)
		})
	}
}

// tarOf is a tar archive of the members (name -> bytes), in the order of names.
func tarOf(t *testing.T, names []string, members map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(members[n]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(members[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A webdataset of presigned shard URLs (refused for HEAD, as S3 refuses a URL presigned
// for GET): the checkpoint holds no signature, restores
// after the shards were signed again, and still tells a shard whose members were
// renamed (the member, which follows the signature in a sample's name, is digested).
func TestWebdatasetCheckpointOfPresignedShards(t *testing.T) {
	shard := func(renamed bool) []byte {
		var names []string
		members := map[string]string{}
		for i := 0; i < 6; i++ {
			key := fmt.Sprintf("s%02d", i)
			if renamed && i == 4 {
				key = "zz"
			}
			names = append(names, key+".txt")
			members[key+".txt"] = fmt.Sprintf("sample %d", i)
		}
		return tarOf(t, names, members)
	}
	// As S3 does, the URL presigned for GET is refused for HEAD (the method is signed).
	var current []byte
	var headRefused atomic.Int64
	srv := fileServer(t, map[string][]byte{}, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodHead {
			headRefused.Add(1)
			http.Error(w, "SignatureDoesNotMatch", http.StatusForbidden)
			return true
		}
		http.ServeContent(w, r, "s.tar", time.Unix(1700000000, 0), bytes.NewReader(current))
		return true
	})
	defer func() {
		if headRefused.Load() == 0 {
			t.Error("no HEAD request was refused: the test does not test the fallback to GET")
		}
	}()
	desc := func(version int) string {
		return fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "seed": 3, "enable_checkpointing": true, "ops": [
			{"op": "readers.webdataset", "name": "R", "outputs": ["t"], "args": {"paths": [%q], "ext": ["txt"], "random_shuffle": true, "initial_fill": 3}}],
			"outputs": ["t"]}`, signedURL("s3-presigned", srv.URL, "/s0.tar", version))
	}
	current = shard(false)
	p := build(t, desc(1), nil)
	for i := 0; i < 2; i++ {
		if _, err := p.Next(); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cp), "SECRET") || !strings.Contains(string(cp), "/s0.tar") {
		t.Fatalf("checkpoint:\n%s", cp)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	want := dumpOutputs(t, b, 0)
	q := build(t, desc(2), cp)
	if b, err = q.Next(); err != nil {
		t.Fatal(err)
	}
	if got := dumpOutputs(t, b, 0); got != want {
		t.Fatalf("restored after signing again:\n%s\nwant\n%s", got, want)
	}
	current = shard(true)
	r, err := engine.NewPipeline([]byte(desc(2)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Restore(cp); err == nil || !strings.Contains(err.Error(), "the data set changed") || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("restore into a shard with a renamed member: %v", err)
	}
}
