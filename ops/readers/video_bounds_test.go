package readers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/videotest"
)

// runVideoErr builds a pipeline of ops (JSON) with top-level keys top and returns the
// first batch's error.
func runVideoErr(t *testing.T, top, ops, out string) error {
	t.Helper()
	desc := fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "device_id": null%s, "ops": [%s], "outputs": [%q]}`, top, ops, out)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		return err
	}
	_, err = p.Next()
	return err
}

func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	for _, s := range parts {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: the error does not say %q: %v", what, s, err)
		}
	}
}

// Issue 24: max_image_pixels bounds readers.video's and decoders.video's frames (from
// the header, before anything is decoded: a few-kilobyte file declares 16000x16000) and
// a sample's frames together, padding included (sequence_length=10**6 on a short clip).
func TestVideoFramesBoundedByMaxImagePixels(t *testing.T) {
	needVideo(t)
	dir := t.TempDir()
	huge := videotest.Make(t, dir, "huge", videotest.Spec{Codec: "mjpeg", Ext: "avi", W: 16, H: 16, Frames: 3})
	videotest.Resize(t, huge, 16000, 16000, true, true)
	clip := videotest.Make(t, dir, "clip", videotest.Spec{Frames: 5})
	reader := func(path string, args string) string {
		return fmt.Sprintf(`{"op": "readers.video", "name": "R", "outputs": ["v"], "args": {"filenames": [%q]%s}}`, path, args)
	}
	decoder := func(path string, args string) string {
		return fmt.Sprintf(`{"op": "readers.file", "name": "F", "outputs": ["b", "l"], "args": {"files": [%q]}},
		  {"op": "decoders.video", "name": "D", "inputs": ["b"], "outputs": ["v"], "args": {%s}}`, path, args)
	}
	wantErr(t, "readers.video, 16000x16000", runVideoErr(t, "", reader(huge, `, "sequence_length": 2`), "v"),
		"huge.avi", "16000x16000", "max_image_pixels=178956970")
	wantErr(t, "decoders.video, 16000x16000", runVideoErr(t, "", decoder(huge, ``), "v"),
		"huge.avi", `"D"`, "16000x16000", "max_image_pixels=178956970")
	wantErr(t, "decoders.video, padded", runVideoErr(t, "", decoder(clip, `"sequence_length": 1000000`), "v"),
		"clip.mp4", `argument "sequence_length"`, "999995 padding frames of 64x48", "max_image_pixels=178956970")
	// padding: at most one image's worth (3 padding frames of 3072 pixels > 6144)
	wantErr(t, "decoders.video, padding", runVideoErr(t, `, "max_image_pixels": 6144`, decoder(clip, `"sequence_length": 8`), "v"),
		"clip.mp4", "3 padding frames of 64x48", "max_image_pixels=6144")
	wantErr(t, "readers.video, padded", runVideoErr(t, "", reader(clip, `, "sequence_length": 1000000, "pad_sequences": true`), "v"),
		"clip.mp4", `argument "sequence_length"`, "1000000 frames of 64x48")
	// within the bounds: as before
	if err := runVideoErr(t, `, "max_image_pixels": 15360`, decoder(clip, `"sequence_length": 5`), "v"); err != nil {
		t.Errorf("5 frames of 64x48 within 15360 pixels: %v", err)
	}
	if err := runVideoErr(t, `, "max_image_pixels": 0`, reader(clip, `, "sequence_length": 200, "pad_sequences": true`), "v"); err != nil {
		t.Errorf("no bound: %v", err)
	}
}
