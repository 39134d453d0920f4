package random_test

// roi_random_crop, random_crop_generator and segmentation.random_mask_pixel in
// pipelines: every drawn window and pixel checked against the rules that define them.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	_ "github.com/godali/godali/ops/all"
)

func node(op, name string, inputs []string, args string) string {
	in, _ := json.Marshal(inputs)
	return fmt.Sprintf(`{"op": %q, "name": %q, "inputs": %s, "outputs": [%q], "args": {%s}}`, op, name, in, name, args)
}

func ints(name string, shape []int, v []int) string {
	d, _ := json.Marshal(v)
	s, _ := json.Marshal(shape)
	return fmt.Sprintf(`{"op": "constant", "name": %q, "outputs": [%q], "args": {"idata": %s, "shape": %s}}`, name, name, d, s)
}

// runBatches returns, per output, every sample of n batches of 8 as int64 values.
func runBatches(t *testing.T, n, threads int, nodes []string, outputs ...string) [][][]int64 {
	t.Helper()
	outs, _ := json.Marshal(outputs)
	desc := fmt.Sprintf(`{"batch_size": 8, "num_threads": %d, "prefetch_queue_depth": 1, "seed": 5, "ops": [%s], "outputs": %s}`,
		threads, strings.Join(nodes, ",\n"), outs)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	res := make([][][]int64, len(outputs))
	for it := 0; it < n; it++ {
		b, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		for k := range outputs {
			for i := 0; i < 8; i++ {
				v, err := b.Output(k).SampleView(i)
				if err != nil {
					t.Fatal(err)
				}
				cnt := 1
				for _, d := range v.Shape {
					cnt *= int(d)
				}
				raw := unsafe.Slice((*byte)(v.Ptr), cnt*v.DType.Size())
				vals := make([]int64, cnt)
				for j := range vals {
					vals[j] = int64(engine.ReadScalar(raw[j*v.DType.Size():], v.DType))
				}
				v.Lease.Release()
				res[k] = append(res[k], vals)
			}
		}
	}
	return res
}

func TestROIRandomCropAndCropGenerator(t *testing.T) {
	out := runBatches(t, 5, 2, []string{
		node("roi_random_crop", "roi", nil, `"crop_shape": [10, 4], "roi_start": [5, 2], "roi_end": [9, 12], "in_shape": [30, 20]`),
		ints("shp", []int{3}, []int{40, 60, 3}),
		`{"op": "random_crop_generator", "name": "g", "inputs": ["shp"], "outputs": ["anchor", "shape"], "args": {"random_area": [0.2, 0.5]}}`,
	}, "roi", "anchor", "shape")
	seen := map[int64]bool{}
	for i, a := range out[0] {
		y, x := a[0], a[1]
		// crop 10 >= ROI extent 4: the window holds [5, 9) and stays in [0, 30);
		// crop 4 < ROI extent 10: the window lies in [2, 12).
		if y > 5 || y+10 < 9 || y < 0 || y+10 > 30 || x < 2 || x+4 > 12 {
			t.Fatalf("sample %d: window start %v breaks the ROI rules", i, a)
		}
		seen[y] = true
		an, sh := out[1][i], out[2][i]
		if an[0] < 0 || an[1] < 0 || an[0]+sh[0] > 40 || an[1]+sh[1] > 60 || sh[0] < 1 || sh[1] < 1 {
			t.Fatalf("sample %d: crop %v+%v leaves the 40x60 image", i, an, sh)
		}
	}
	// y is drawn from [0, 5]: 40 draws see most of the 6 values.
	if len(seen) < 4 {
		t.Errorf("window starts %v: not spread over [0, 5]", seen)
	}
}

// An image with no rows (DALI's variable-batch test feeds shapes [0, 0]) gets the empty
// window, anchor (0, 0) and shape (0, 0), as DALI's crop window generator returns it.
func TestCropGeneratorEmptyImageGivesEmptyWindow(t *testing.T) {
	out := runBatches(t, 2, 1, []string{
		ints("shp", []int{2}, []int{0, 0}),
		ints("shp2", []int{3}, []int{0, 5, 3}),
		`{"op": "random_crop_generator", "name": "g", "inputs": ["shp"], "outputs": ["anchor", "shape"]}`,
		`{"op": "random_crop_generator", "name": "g2", "inputs": ["shp2"], "outputs": ["anchor2", "shape2"]}`,
	}, "anchor", "shape", "anchor2", "shape2")
	for k := range out {
		for i, v := range out[k] {
			if len(v) != 2 || v[0] != 0 || v[1] != 0 {
				t.Fatalf("output %d sample %d: %v, want [0 0]", k, i, v)
			}
		}
	}
}

func TestRandomMaskPixelDrawsForegroundAndIsThreadIndependent(t *testing.T) {
	mask := make([]int, 5*7)
	fg := map[[2]int64]bool{{1, 2}: true, {4, 6}: true, {0, 0}: true}
	for p := range fg {
		mask[p[0]*7+p[1]] = 2
	}
	mask[3*7+3] = 1
	nodes := []string{
		ints("m", []int{5, 7}, mask),
		node("segmentation.random_mask_pixel", "v", []string{"m"}, `"foreground": 1, "value": 2`),
		node("segmentation.random_mask_pixel", "t", []string{"m"}, `"foreground": 1, "threshold": 1.5`),
		node("segmentation.random_mask_pixel", "any", []string{"m"}, `"foreground": 0`),
	}
	a := runBatches(t, 4, 1, nodes, "v", "t", "any")
	b := runBatches(t, 4, 3, nodes, "v", "t", "any")
	got := map[[2]int64]int{}
	for k := 0; k < 3; k++ {
		for i := range a[k] {
			p := [2]int64{a[k][i][0], a[k][i][1]}
			if k < 2 && !fg[p] {
				t.Fatalf("output %d sample %d: pixel %v is not foreground", k, i, p)
			}
			if k == 0 {
				got[p]++
			}
			if fmt.Sprint(a[k][i]) != fmt.Sprint(b[k][i]) {
				t.Fatalf("output %d sample %d differs with 3 threads: %v vs %v", k, i, a[k][i], b[k][i])
			}
		}
	}
	if len(got) != 3 {
		t.Errorf("32 draws reached only %v of the 3 foreground pixels", got)
	}
}

// With an input of more dimensions than crop_shape (an HWC image, a 2-D window) the
// window is drawn over the input's leading dimensions, as DALI's roi_random_crop reads
// them: it stays inside the 12x7 height and width; a 2-D input with a 3-D window is
// refused, naming in_shape.
func TestROIRandomCropUsesTheInputsLeadingDimensions(t *testing.T) {
	img := make([]int, 12*7*3)
	out := runBatches(t, 4, 1, []string{
		ints("img", []int{12, 7, 3}, img),
		node("roi_random_crop", "roi", []string{"img"}, `"crop_shape": [5, 5], "roi_start": [0, 0], "roi_end": [3, 3]`),
	}, "roi")
	for i, a := range out[0] {
		// crop 5 >= ROI extent 3: the window holds [0, 3) and stays in [0, 12) x [0, 7).
		if len(a) != 2 || a[0] != 0 || a[1] != 0 {
			t.Fatalf("sample %d: window start %v, want [0 0] (the only start holding the ROI inside the image)", i, a)
		}
	}
	out = runBatches(t, 4, 1, []string{
		ints("img", []int{12, 7, 3}, img),
		node("roi_random_crop", "roi", []string{"img"}, `"crop_shape": [5, 2], "roi_start": [0, 0], "roi_end": [12, 7]`),
	}, "roi")
	for i, a := range out[0] {
		if a[0] < 0 || a[0]+5 > 12 || a[1] < 0 || a[1]+2 > 7 {
			t.Fatalf("sample %d: window start %v leaves the 12x7 image", i, a)
		}
	}
	desc := `{"batch_size": 1, "num_threads": 1, "device_id": null, "ops": [` +
		ints("img", []int{12, 7}, make([]int, 84)) + `,` +
		node("roi_random_crop", "roi", []string{"img"}, `"crop_shape": [5, 5, 1], "roi_start": [0, 0, 0], "roi_end": [3, 3, 1]`) +
		`], "outputs": ["roi"]}`
	p, err := engine.NewPipeline([]byte(desc))
	if err == nil {
		defer p.Close()
		if err = p.Build(); err == nil {
			_, err = p.Next()
		}
	}
	if err == nil || !strings.Contains(err.Error(), "in_shape") {
		t.Fatalf("a 2-D input with a 3-D window: %v, want an error naming in_shape", err)
	}
}
