package readers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
)

// writeCOCO writes n images (bytes "image i") with ids 10n-i (so that id order reverses
// file order) and i boxes on image i.
func writeCOCO(t *testing.T, n int) (root, ann string) {
	dir := t.TempDir()
	root = filepath.Join(dir, "img")
	os.MkdirAll(root, 0o755)
	var images, anns []map[string]any
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%02d.jpg", i)
		os.WriteFile(filepath.Join(root, name), []byte(fmt.Sprintf("image %d", i)), 0o644)
		images = append(images, map[string]any{"id": 10*n - i, "file_name": name, "width": 100, "height": 50})
		for k := 0; k < i; k++ {
			anns = append(anns, map[string]any{"id": len(anns) + 1, "image_id": 10*n - i, "category_id": 7,
				"bbox": []float64{float64(k), 1, 10, 20}, "iscrowd": 0})
		}
	}
	b, _ := json.Marshal(map[string]any{"images": images, "annotations": anns, "categories": []any{map[string]any{"id": 7}}})
	ann = filepath.Join(dir, "ann.json")
	os.WriteFile(ann, b, 0o644)
	return root, ann
}

func cocoPipeline(t *testing.T, root, ann, extra string, batch int) (*engine.Pipeline, error) {
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": 1, "device_id": null, "seed": 1,
	"ops": [{"op": "readers.coco", "name": "r", "outputs": ["jpegs", "boxes", "labels", "ids"],
	  "args": {"file_root": %q, "annotations_file": %q, "image_ids": true %s}}],
	"outputs": ["jpegs", "boxes", "labels", "ids"]}`, batch, root, ann, extra)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return nil, err
	}
	if err := p.Build(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func sampleBytes(t *testing.T, b *engine.Batch, out, i int) []byte {
	v, err := b.Output(out).SampleView(i)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Lease.Release()
	n := engine.Float32.Size()
	if out == 0 {
		n = 1
	}
	for _, d := range v.Shape {
		n *= int(d)
	}
	return append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...)
}

// TestCocoReaderShardAndOrder: the samples come in image id order, the shard
// arithmetic is the shared base's, and empty samples have [0, 4] boxes.
func TestCocoReaderShardAndOrder(t *testing.T) {
	root, ann := writeCOCO(t, 5)
	p, err := cocoPipeline(t, root, ann, `, "shard_id": 1, "num_shards": 2`, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if m, err := p.ReaderMeta("r"); err != nil || m.EpochSize != 5 || m.ShardSize != 3 {
		t.Fatalf("meta %+v", m)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	// Id order is file 4, 3, 2, 1, 0; shard 1 of 2 over 5 is positions [2, 5): files 2, 1, 0.
	for i, file := range []int{2, 1, 0} {
		if got := string(sampleBytes(t, b, 0, i)); got != fmt.Sprintf("image %d", file) {
			t.Errorf("sample %d: %q, want image %d", i, got, file)
		}
		if s := b.Output(1).SampleShape(i); len(s) != 2 || s[0] != file || s[1] != 4 {
			t.Errorf("sample %d: boxes shape %v, want [%d 4]", i, s, file)
		}
		if s := b.Output(2).SampleShape(i); len(s) != 1 || s[0] != file {
			t.Errorf("sample %d: labels shape %v", i, s)
		}
		id := sampleBytes(t, b, 3, i)
		if got := int32(id[0]) | int32(id[1])<<8; got != int32(50-file) {
			t.Errorf("sample %d: image id %d, want %d", i, got, 50-file)
		}
	}
}

func TestCocoReaderErrorsNameTheirCause(t *testing.T) {
	root, ann := writeCOCO(t, 2)
	for _, c := range []struct{ extra, want string }{
		{`, "pixelwise_masks": true`, "pixelwise_masks"},
		{`, "images": ["nope.jpg"]`, "nope.jpg"},
		{`, "size_threshold": -1`, "size_threshold"},
		{`, "preprocessed_annotations": "x"`, "preprocessed_annotations"},
	} {
		_, err := cocoPipeline(t, root, ann, c.extra, 2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %s", c.extra, err, c.want)
		}
	}
	good, err := os.ReadFile(ann)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range [][]byte{[]byte(`{"images": [`), append(append([]byte{}, good...), " trailing"...), append(append([]byte{}, good...), good...)} {
		bad := filepath.Join(t.TempDir(), "broken.json")
		os.WriteFile(bad, doc, 0o644)
		_, err := cocoPipeline(t, root, bad, "", 2)
		var e *engine.Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), "broken.json") {
			t.Errorf("malformed annotations %.30q...: %v", doc, err)
		}
	}
	// A node naming more outputs than the arguments give is refused at build time.
	desc := fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "device_id": null,
	"ops": [{"op": "readers.coco", "name": "r", "outputs": ["a", "b", "c", "d"], "args": {"file_root": %q, "annotations_file": %q}}],
	"outputs": ["a"]}`, root, ann)
	if _, err := engine.NewPipeline([]byte(desc)); err == nil || !strings.Contains(err.Error(), "produces 3") {
		t.Errorf("too many outputs: %v", err)
	}
}

// TestCocoFileNamesStayUnderFileRoot: an annotation file_name that is absolute or climbs
// out with ".." is refused at build, naming the entry and the opt-in; with
// allow_outside_root it is read.
func TestCocoFileNamesStayUnderFileRoot(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("outside the data set"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{outside, "../../" + filepath.Base(filepath.Dir(outside)) + "/secret.txt", "sub/../../x.jpg"} {
		root, ann := writeCOCO(t, 2)
		b, _ := os.ReadFile(ann)
		var doc map[string]any
		json.Unmarshal(b, &doc)
		doc["images"].([]any)[1].(map[string]any)["file_name"] = name
		b, _ = json.Marshal(doc)
		os.WriteFile(ann, b, 0o644)
		p, err := cocoPipeline(t, root, ann, "", 2)
		if err == nil {
			p.Close()
			t.Fatalf("file_name %q: built, want refused", name)
		}
		if msg := err.Error(); !strings.Contains(msg, name) || !strings.Contains(msg, "allow_outside_root") {
			t.Fatalf("file_name %q: error %q does not name the entry and the opt-in", name, msg)
		}
	}
	root, ann := writeCOCO(t, 2)
	b, _ := os.ReadFile(ann)
	var doc map[string]any
	json.Unmarshal(b, &doc)
	doc["images"].([]any)[1].(map[string]any)["file_name"] = outside
	b, _ = json.Marshal(doc)
	os.WriteFile(ann, b, 0o644)
	p, err := cocoPipeline(t, root, ann, `, "allow_outside_root": true`, 2)
	if err != nil {
		t.Fatalf("with allow_outside_root: %v", err)
	}
	defer p.Close()
	batch, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := 0; i < 2; i++ {
		if string(sampleBytes(t, batch, 0, i)) == "outside the data set" {
			found = true
		}
	}
	if !found {
		t.Fatal("the opted-in file outside file_root was not read")
	}
}
