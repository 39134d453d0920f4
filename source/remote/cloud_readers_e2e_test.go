package remote_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/godali/godali/source/remote"
	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// readers.webdataset, readers.tfrecord, readers.file (file_root listing and file_list)
// over az:// from
// Azurite and gs:// from fake-gcs-server, through the fault proxy: the same pipeline
// as over s3:// with only the paths changed.

func TestReadersOverAzureAndGCS(t *testing.T) {
	d := makeE2E(t)
	recs := tfrecordFiles(t)
	for _, kind := range []string{"az", "gs"} {
		t.Run(kind, func(t *testing.T) {
			var base string
			var p *faultproxy.Proxy
			var err error
			switch kind {
			case "az":
				endpoint := remote.AzuriteServer(t)
				container := remote.BucketName(t, "r")
				remote.PutAzure(t, endpoint, container, d.files)
				p, err = faultproxy.Start(strings.TrimSuffix(endpoint, "/"+remote.AzuriteAccount), readerFaults, 6)
				if err != nil {
					t.Fatal(err)
				}
				remote.AzureEnv(t, p.URL+"/"+remote.AzuriteAccount)
				base = "az://" + container + "/"
			case "gs":
				endpoint := remote.FakeGCSServer(t)
				bucket := remote.BucketName(t, "r")
				remote.PutGCS(t, endpoint, bucket, d.files)
				p, err = faultproxy.Start(endpoint, readerFaults, 7)
				if err != nil {
					t.Fatal(err)
				}
				remote.GCSEnv(t, p.URL)
				base = "gs://" + bucket + "/"
			}
			defer p.Close()
			var shards []string
			for _, s := range d.shards {
				shards = append(shards, base+s)
			}
			got := readEpoch(t, fmt.Sprintf(`{"op": "readers.webdataset", "name": "R", "outputs": ["a", "b"], "args": {"paths": %s, "ext": ["bin", "txt"], "io_concurrency": 8}}`, quoted(shards)), keyOfText)
			checkOnce(t, "webdataset over "+kind, got, d.samples)

			// readers.tfrecord, records written by the PyPI tfrecord package.
			switch kind {
			case "az":
				remote.PutAzure(t, remote.AzuriteServer(t), strings.TrimSuffix(strings.TrimPrefix(base, "az://"), "/"), recs.files)
			case "gs":
				remote.PutGCS(t, remote.FakeGCSServer(t), strings.TrimSuffix(strings.TrimPrefix(base, "gs://"), "/"), recs.files)
			}
			got = readEpoch(t, fmt.Sprintf(`{"op": "readers.tfrecord", "name": "R", "outputs": ["a", "b"], "args": {"path": [%q, %q], "features": %q}}`,
				base+"r0.tfrecord", base+"r1.tfrecord", `[{"name": "data", "kind": "fixed", "dtype": "string", "shape": []}, {"name": "key", "kind": "fixed", "dtype": "string", "shape": []}]`), keyOfText)
			checkOnce(t, "tfrecord over "+kind, got, recs.samples)

			keys := treeKeys(d)
			byContent := func(got map[string][][]byte) map[string][][]byte {
				out := map[string][][]byte{}
				for _, bs := range got {
					for _, b := range bs {
						out[keys[string(b)]] = append(out[keys[string(b)]], b)
					}
				}
				return out
			}
			cacheDir := t.TempDir()
			got = readEpoch(t, fmt.Sprintf(`{"op": "readers.file", "name": "R", "outputs": ["a", "b"], "args": {"file_root": %q, "file_filters": ["*.jpg"], "cache_dir": %q}}`, base+"tree", cacheDir),
				func(b []byte) string { return fmt.Sprint(b) })
			checkOnce(t, "readers.file file_root over "+kind, byContent(got), d.samples)
			if ents, _ := os.ReadDir(cacheDir); len(ents) < len(d.samples) {
				t.Errorf("cache_dir holds %d entries after the epoch; want one per file (%d)", len(ents), len(d.samples))
			}
			got = readEpoch(t, fmt.Sprintf(`{"op": "readers.file", "name": "R", "outputs": ["a", "b"], "args": {"file_root": %q, "file_list": %q}}`, base+"tree", base+"tree/list.txt"),
				func(b []byte) string { return fmt.Sprint(b) })
			checkOnce(t, "readers.file file_list over "+kind, byContent(got), d.samples)
			if p.Errors.Load() == 0 || p.Drops.Load() == 0 {
				t.Errorf("faults were not exercised: %d 503s, %d drops", p.Errors.Load(), p.Drops.Load())
			}
		})
	}
}
