package engine

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 24 item 4: float sizes beyond int64 gave wrong outputs (resize_shorter=1e30 a
// 1x1 image, paste(ratio=1e18) its input unchanged). Every float size argument of the
// image operators is tried with extreme values, as a constant and per sample: a value
// that is no usable extent (engine.ExtentOK) is an error naming the argument; any other
// value gives a result or a named error, never an internal error.
func TestExtremeSizeArguments(t *testing.T) {
	root := t.TempDir()
	writeJPEG(t, filepath.Join(root, "small.jpg"), 32, 24, 0)
	type sizeCase struct {
		op, arg string
		extra   string // other arguments, JSON
		list    int    // the argument is a list of this many values (0: a scalar)
	}
	cases := []sizeCase{
		{"resize", "resize_x", `"resize_y": 20`, 0},
		{"resize", "resize_y", `"resize_x": 20`, 0},
		{"resize", "resize_shorter", ``, 0},
		{"resize", "resize_longer", ``, 0},
		{"resize", "size", ``, 2},
		{"resize", "roi_start", `"resize_x": 20, "resize_y": 20, "roi_end": [10, 10]`, 2},
		{"crop", "crop", `"out_of_bounds_policy": "pad"`, 2},
		{"crop", "crop_h", `"crop_w": 10, "out_of_bounds_policy": "pad"`, 0},
		{"crop", "crop_pos_x", `"crop": [10, 10], "out_of_bounds_policy": "pad"`, 0},
		{"crop_mirror_normalize", "crop", `"out_of_bounds_policy": "pad"`, 2},
		{"crop_mirror_normalize", "crop_pos_y", `"crop": [10, 10], "out_of_bounds_policy": "pad"`, 0},
		{"paste", "ratio", `"fill_value": [0]`, 0},
		{"paste", "min_canvas_size", `"ratio": 1, "fill_value": [0]`, 0},
		{"random_resized_crop", "size", ``, 2},
		{"experimental.warp_perspective", "size", `"matrix": [1, 0, 0, 0, 1, 0, 0, 0, 1]`, 2},
		{"decoders.image_crop", "crop_pos_x", `"crop": [10, 10]`, 0},
	}
	values := []float64{1e308, -1e308, 1 << 63, 1 << 62, -(1 << 62), 1e30, 1e20, 1e18, 1e9, 1e4, -1, 0.5, 0}
	desc := func(c sizeCase, v float64, perSample bool) string {
		num := strconv.FormatFloat(v, 'g', -1, 64)
		val := num
		if c.list > 0 {
			val = "[" + strings.TrimSuffix(strings.Repeat(num+", ", c.list), ", ") + "]"
		}
		var args []string
		if c.extra != "" {
			args = append(args, c.extra)
		}
		gen, argIn := "", ""
		if perSample {
			shape := "[]"
			if c.list > 0 {
				shape = fmt.Sprintf("[%d]", c.list)
			}
			gen = fmt.Sprintf(`, {"op": "random.uniform", "name": "u", "outputs": ["v"], "args": {"range": [%s, %s], "shape": %s}}`, num, num, shape)
			argIn = fmt.Sprintf(`, "arg_inputs": {%q: "v"}`, c.arg)
		} else {
			args = append(args, fmt.Sprintf("%q: %s", c.arg, val))
		}
		in, dec := "img", `{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]}, `
		if strings.HasPrefix(c.op, "decoders.") {
			in, dec = "b", ""
		}
		return fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "max_image_pixels": 1000000, "ops": [
		 {"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%q]}}, %s
		 {"op": %q, "name": "big", "inputs": [%q], "outputs": ["out"], "args": {%s}%s}%s], "outputs": ["out"]}`,
			filepath.Join(root, "small.jpg"), dec, c.op, in, strings.Join(args, ", "), argIn, gen)
	}
	tried := 0
	for _, c := range cases {
		for _, v := range values {
			for _, perSample := range []bool{false, true} {
				tried++
				start := time.Now()
				name := fmt.Sprintf("%s %s=%g per-sample=%v", c.op, c.arg, v, perSample)
				// random.uniform makes float32: the sample's value is v rounded to it.
				eff := v
				if perSample {
					eff = float64(float32(v))
				}
				err := runOnce(desc(c, v, perSample))
				if !ExtentOK(eff) {
					if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("argument %q", c.arg)) {
						t.Errorf("%s: %v; want an error naming argument %q", name, err, c.arg)
					}
				}
				if d := time.Since(start); d > time.Second {
					t.Logf("%s: %v", name, d)
				}
				if err != nil && (StatusOf(err) == StatusInternal || strings.Contains(err.Error(), "internal error")) {
					t.Errorf("%s: internal error: %v", name, err)
				}
			}
		}
	}
	t.Logf("%d cases", tried)
}

// runOnce builds desc and runs one batch.
func runOnce(desc string) error {
	p, err := NewPipeline([]byte(desc))
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

// Window and crop-shape arguments that were converted to int before their bound was
// checked: gaussian_blur's window_size 1e30 was called "not odd", random_bbox_crop's
// crop_shape 1e30 drew its anchor from int(-1e30).
func TestExtremeWindowArguments(t *testing.T) {
	root := t.TempDir()
	img := filepath.Join(root, "small.jpg")
	writeJPEG(t, img, 32, 24, 0)
	for _, v := range []string{"1e308", "1e30", "9223372036854775807", "4611686018427387904"} {
		blur := fmt.Sprintf(`{"batch_size": 1, "ops": [{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%q]}},
		 {"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]},
		 {"op": "gaussian_blur", "name": "g", "inputs": ["img"], "outputs": ["out"], "args": {"window_size": %s}}], "outputs": ["out"]}`, img, v)
		if err := runOnce(blur); err == nil || !strings.Contains(err.Error(), "window_size") {
			t.Errorf("gaussian_blur window_size=%s: %v", v, err)
		}
		crop := fmt.Sprintf(`{"batch_size": 1, "ops": [{"op": "constant", "name": "c", "outputs": ["boxes"], "args": {"fdata": [0.1, 0.1, 0.5, 0.5], "shape": [1, 4]}},
		 {"op": "random_bbox_crop", "name": "rbc", "inputs": ["boxes"], "outputs": ["anchor", "shape", "bb"], "args": {"input_shape": [100, 100], "crop_shape": [%s, %s]}}],
		 "outputs": ["anchor", "shape"]}`, v, v)
		err := runOnce(crop)
		if err != nil && (StatusOf(err) == StatusInternal || strings.Contains(err.Error(), "internal error")) {
			t.Errorf("random_bbox_crop crop_shape=%s: %v", v, err)
		}
	}
}
