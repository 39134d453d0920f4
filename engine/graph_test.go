package engine

import (
	"strings"
	"testing"
)

func TestBuildRejectsBadDescriptions(t *testing.T) {
	cases := []struct {
		name, json string
		want       []string // substrings of the error
	}{
		{"not json", `{"batch_size": 2,`, []string{"not a JSON object"}},
		{"unknown top key", `{"batch_size": 2, "btach": 1, "ops": [], "outputs": ["x"]}`, []string{`"btach"`, "batch_size"}},
		{"missing batch", `{"ops": [], "outputs": ["x"]}`, []string{"batch_size"}},
		{"zero batch", `{"batch_size": 0, "ops": [], "outputs": ["x"]}`, []string{"batch_size", ">= 1"}},
		{"unknown op", `{"batch_size": 2, "ops": [{"op": "decoders.imagee", "name": "dec", "outputs": ["x"]}], "outputs": ["x"]}`,
			[]string{`"dec"`, `"decoders.imagee"`, "decoders.image_random_crop"}},
		{"unknown arg", `{"batch_size": 2, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["x"], "args": {"probabilty": 0.5}}], "outputs": ["x"]}`,
			[]string{`"c"`, `"probabilty"`, "probability"}},
		{"mistyped arg", `{"batch_size": 2, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["x"], "args": {"probability": "high"}}], "outputs": ["x"]}`,
			[]string{`"c"`, `"probability"`, "expected number"}},
		{"bad enum", `{"batch_size": 2, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["x"], "args": {"dtype": "FLOAT128"}}], "outputs": ["x"]}`,
			[]string{`"dtype"`, "FLOAT16"}},
		{"dangling input", `{"batch_size": 2, "ops": [{"op": "resize", "name": "r", "inputs": ["nope"], "outputs": ["x"], "args": {"resize_x": 8}}], "outputs": ["x"]}`,
			[]string{`"r"`, `"nope"`, "available: x"}},
		{"cycle", `{"batch_size": 2, "ops": [
			{"op": "resize", "name": "a", "inputs": ["y"], "outputs": ["x"], "args": {"resize_x": 8}},
			{"op": "resize", "name": "b", "inputs": ["x"], "outputs": ["y"], "args": {"resize_x": 8}}], "outputs": ["x"]}`,
			[]string{"cycle", "a", "b"}},
		{"wrong input count", `{"batch_size": 2, "ops": [{"op": "random.coin_flip", "name": "c", "inputs": ["c2", "c2"], "outputs": ["x"]}, {"op": "random.coin_flip", "name": "c2", "outputs": ["c2"]}], "outputs": ["x"]}`,
			[]string{`"c"`, "inputs"}},
		{"arg input not allowed", `{"batch_size": 2, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["m"]},
			{"op": "random.coin_flip", "name": "d", "arg_inputs": {"seed": "m"}, "outputs": ["x"]}], "outputs": ["x"]}`,
			[]string{`"d"`, `"seed"`, "per sample"}},
		{"unknown output", `{"batch_size": 2, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["m"]}], "outputs": ["z"]}`,
			[]string{`"z"`, "available: m"}},
		// No flavour has a gpu decoder: ErrNoCUDA in the CPU flavour, "no gpu
		// implementation" in the CUDA flavour, both naming the node and the device.
		{"gpu on cpu flavour", `{"batch_size": 2, "device_id": 0, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["m"]},
			{"op": "decoders.image", "name": "r", "device": "gpu", "inputs": ["m"], "outputs": ["x"]}], "outputs": ["x"]}`,
			[]string{`"r"`, "gpu"}},
		{"bad reader args", `{"batch_size": 2, "ops": [{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": ["a"], "shard_id": 3, "num_shards": 2}}], "outputs": ["b"]}`,
			[]string{`"R"`, `"shard_id"`}},
		{"bad cmn input", `{"batch_size": 2, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["m"]},
			{"op": "crop_mirror_normalize", "name": "n", "inputs": ["m"], "outputs": ["x"]}], "outputs": ["x"]}`,
			[]string{`"n"`, "allowed layouts", "HWC"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewPipeline([]byte(c.json))
			if err == nil {
				t.Fatalf("accepted: %s", c.json)
			}
			if s := StatusOf(err); s != StatusInvalidPipeline && s != StatusNoCUDA {
				t.Errorf("status %d, want invalid pipeline: %v", s, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestSchemasAreComplete(t *testing.T) {
	want := []string{"readers.file", "decoders.image", "decoders.image_random_crop", "resize",
		"random_resized_crop", "crop", "flip", "crop_mirror_normalize", "random.coin_flip", "random.uniform",
		"random.normal", "random.choice", "brightness_contrast", "hsv", "color_twist", "rotate", "gaussian_blur"}
	for _, name := range want {
		s, ok := LookupSchema(name)
		if !ok {
			t.Errorf("operator %s is not registered", name)
			continue
		}
		if s.Doc == "" || len(s.Devices) == 0 {
			t.Errorf("%s: doc %q devices %v", name, s.Doc, s.Devices)
		}
		for _, a := range s.Args {
			if a.Doc == "" {
				t.Errorf("%s.%s has no doc", name, a.Name)
			}
		}
	}
}
