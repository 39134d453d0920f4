package coco

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/godali/godali/formats"
)

// testFile is written with encoding/json from plain maps, not from this package's types.
func testFile(t testing.TB) []byte {
	doc := map[string]any{
		"images": []any{
			map[string]any{"id": 7, "file_name": "b.jpg", "width": 200, "height": 100},
			map[string]any{"id": 3, "file_name": "a.jpg", "width": 50, "height": 40},
			map[string]any{"id": 9, "file_name": "c.jpg", "width": 10, "height": 10},
		},
		"categories": []any{
			map[string]any{"id": 90, "name": "z"},
			map[string]any{"id": 1, "name": "a"},
			map[string]any{"id": 18, "name": "m"},
		},
		"annotations": []any{
			map[string]any{"id": 1, "image_id": 7, "category_id": 18, "bbox": []float64{10, 20, 30, 40}, "iscrowd": 0,
				"segmentation": [][]float64{{10, 20, 40, 20, 40, 60}, {0, 0, 1, 1}}},
			map[string]any{"id": 2, "image_id": 3, "category_id": 90, "bbox": []float64{1, 2, 3, 4}, "iscrowd": 1,
				"segmentation": map[string]any{"counts": "abc", "size": []int{40, 50}}},
			map[string]any{"id": 3, "image_id": 7, "category_id": 1, "bbox": []float64{0, 0, 0.05, 50}, "iscrowd": 0},
			map[string]any{"id": 4, "image_id": 3, "category_id": 1, "bbox": []float64{5, 6, 7, 8}},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSamplesDefaults(t *testing.T) {
	f, err := ParseBytes(testFile(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Samples(Options{IncludeCrowd: true, SizeThreshold: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	// Ordered by image id; categories 1, 18, 90 become labels 1, 2, 3; annotation 3 is
	// narrower than 0.1 px and dropped.
	want := []Sample{
		{ImageID: 3, FileName: "a.jpg", Width: 50, Height: 40,
			Boxes: [][4]float32{{1, 2, 3, 4}, {5, 6, 7, 8}}, Labels: []int32{3, 1}},
		{ImageID: 7, FileName: "b.jpg", Width: 200, Height: 100,
			Boxes: [][4]float32{{10, 20, 30, 40}}, Labels: []int32{2}},
		{ImageID: 9, FileName: "c.jpg", Width: 10, Height: 10},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("samples:\n got %+v\nwant %+v", got, want)
	}
}

func TestSamplesOptions(t *testing.T) {
	f, err := ParseBytes(testFile(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Samples(Options{LTRB: true, Ratio: true, SkipEmpty: true, AvoidClassRemapping: true,
		SizeThreshold: 0, Polygons: true, Images: []string{"b.jpg", "a.jpg", "b.jpg"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].FileName != "b.jpg" || got[1].FileName != "a.jpg" || got[2].FileName != "b.jpg" {
		t.Fatalf("order: %+v", got)
	}
	b := got[0]
	wantBoxes := [][4]float64{{10.0 / 200, 20.0 / 100, 40.0 / 200, 60.0 / 100}, {0, 0, 0.05 / 200, 50.0 / 100}}
	if len(b.Boxes) != 2 {
		t.Fatalf("boxes %v", b.Boxes)
	}
	for i := range wantBoxes {
		for k := 0; k < 4; k++ {
			if math.Abs(float64(b.Boxes[i][k])-wantBoxes[i][k]) > 1e-7 {
				t.Fatalf("box %d: got %v want %v", i, b.Boxes[i], wantBoxes[i])
			}
		}
	}
	if !reflect.DeepEqual(b.Labels, []int32{18, 1}) {
		t.Fatalf("labels %v", b.Labels)
	}
	if !reflect.DeepEqual(b.Polygons, [][3]int32{{0, 0, 3}, {0, 3, 5}}) {
		t.Fatalf("polygons %v", b.Polygons)
	}
	if len(b.Vertices) != 5 || b.Vertices[1] != [2]float32{40.0 / 200, 20.0 / 100} {
		t.Fatalf("vertices %v", b.Vertices)
	}
	// Crowd annotations excluded: a.jpg keeps only annotation 4.
	got, err = f.Samples(Options{SizeThreshold: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[0].Labels, []int32{1}) {
		t.Fatalf("without crowd: %+v", got[0])
	}
	if _, err := f.Samples(Options{Images: []string{"nope.jpg"}}); err == nil || !strings.Contains(err.Error(), "nope.jpg") {
		t.Fatalf("unknown image: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	for _, doc := range []string{
		`[]`,
		`{"images": [{"id": 1, "file_name": "", "width": 1, "height": 1}]}`,
		`{"images": [{"id": 1, "file_name": "x", "width": 0, "height": 1}]}`,
		`{"annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3]}]}`,
		`{"annotations": [{"id": 1, "category_id": 1, "bbox": [1, 2, 3, 4]}]}`,
		`{"annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "segmentation": [[1, 2, 3]]}]}`,
		`{"annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "segmentation": 5}]}`,
		// Garbage after the document, or a second document: a damaged or concatenated file.
		`{"images": []} garbage`,
		`{"images": []}{"images": []}`,
		`{"images": []}]`,
	} {
		if _, err := ParseBytes([]byte(doc)); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", doc, err)
		}
	}
	for _, doc := range []string{
		`{"images": [{"id": 1, "file_name": "x", "width": 1, "height": 1}], "annotations": [{"id": 1, "image_id": 2, "category_id": 1, "bbox": [1, 2, 3, 4]}], "categories": [{"id": 1}]}`,
		`{"images": [{"id": 1, "file_name": "x", "width": 1, "height": 1}], "annotations": [{"id": 1, "image_id": 1, "category_id": 5, "bbox": [1, 2, 3, 4]}], "categories": [{"id": 1}]}`,
		`{"images": [{"id": 1, "file_name": "x", "width": 1, "height": 1}, {"id": 1, "file_name": "y", "width": 1, "height": 1}]}`,
	} {
		f, err := ParseBytes([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if _, err := f.Samples(Options{}); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", doc, err)
		}
	}
}
