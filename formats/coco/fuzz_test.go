package coco

import (
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser and, when it accepts them, builds the
// samples with every option: errors are fine, panics and samples inconsistent with
// their own tables are not.
func FuzzParse(f *testing.F) {
	f.Add(testFile(f))
	f.Add([]byte(`{"images": [{"id": 1, "file_name": "x", "width": 3, "height": 2}], "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "segmentation": [[0, 0, 1, 0, 1, 1]]}], "categories": [{"id": 1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := ParseBytes(b)
		if err != nil {
			return
		}
		for _, opt := range []Options{{}, {LTRB: true, Ratio: true, Polygons: true, IncludeCrowd: true, SkipEmpty: true, AvoidClassRemapping: true}} {
			samples, err := file.Samples(opt)
			if err != nil {
				continue
			}
			for _, s := range samples {
				if len(s.Boxes) != len(s.Labels) {
					t.Fatalf("%d boxes, %d labels", len(s.Boxes), len(s.Labels))
				}
				for _, p := range s.Polygons {
					if p[0] < 0 || int(p[0]) >= len(s.Boxes) || p[1] < 0 || p[1] > p[2] || int(p[2]) > len(s.Vertices) {
						t.Fatalf("polygon %v outside %d objects, %d vertices", p, len(s.Boxes), len(s.Vertices))
					}
				}
			}
		}
	})
}
