package coco

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/godali/godali/formats"
)

// MaxFileBytes bounds the annotation file Parse reads (COCO 2017 train is ~450 MB).
const MaxFileBytes = 4 << 30

// Image is one entry of the "images" array.
type Image struct {
	ID       int64  `json:"id"`
	FileName string `json:"file_name"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

// Annotation is one entry of the "annotations" array. Polygons holds the polygon
// segmentation (a list of flat x0 y0 x1 y1 ... lists); RLE segmentations (crowd
// regions) leave it empty and set RLE.
type Annotation struct {
	ID         int64
	ImageID    int64
	CategoryID int64
	BBox       [4]float64 // x, y, w, h in pixels
	IsCrowd    bool
	Polygons   [][]float64
	RLE        bool
}

// Category is one entry of the "categories" array.
type Category struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// File is a parsed annotation file.
type File struct {
	Images      []Image
	Annotations []Annotation
	Categories  []Category
}

type rawAnnotation struct {
	ID           int64           `json:"id"`
	ImageID      *int64          `json:"image_id"`
	CategoryID   *int64          `json:"category_id"`
	BBox         []float64       `json:"bbox"`
	IsCrowd      int             `json:"iscrowd"`
	Segmentation json.RawMessage `json:"segmentation"`
}

type rawFile struct {
	Images      []Image         `json:"images"`
	Annotations []rawAnnotation `json:"annotations"`
	Categories  []Category      `json:"categories"`
}

// Parse reads an annotation file of at most MaxFileBytes.
func Parse(r io.Reader) (*File, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, formats.Malformedf("coco: annotation file larger than %d bytes", int64(MaxFileBytes))
	}
	return ParseBytes(b)
}

// ParseBytes parses an annotation file held in memory.
func ParseBytes(b []byte) (*File, error) {
	var raw rawFile
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return nil, formats.Malformedf("coco: not a COCO annotation file: %v", err)
	}
	// One document: a second one, or garbage, after it is a damaged or concatenated file.
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, formats.Malformedf("coco: not a COCO annotation file: text after the JSON document (at byte %d of %d)", end, len(b))
	}
	f := &File{Images: raw.Images, Categories: raw.Categories}
	for i, im := range f.Images {
		if im.FileName == "" {
			return nil, formats.Malformedf("coco: images[%d] (id %d) has no file_name", i, im.ID)
		}
		if im.Width <= 0 || im.Height <= 0 {
			return nil, formats.Malformedf("coco: images[%d] (%s) has size %dx%d; width and height must be positive", i, im.FileName, im.Width, im.Height)
		}
	}
	f.Annotations = make([]Annotation, len(raw.Annotations))
	for i, ra := range raw.Annotations {
		a := Annotation{ID: ra.ID, IsCrowd: ra.IsCrowd != 0}
		if ra.ImageID == nil || ra.CategoryID == nil {
			return nil, formats.Malformedf("coco: annotations[%d] (id %d) lacks image_id or category_id", i, ra.ID)
		}
		a.ImageID, a.CategoryID = *ra.ImageID, *ra.CategoryID
		if len(ra.BBox) != 4 {
			return nil, formats.Malformedf("coco: annotations[%d] (id %d): bbox has %d numbers, expected 4 (x, y, width, height)", i, ra.ID, len(ra.BBox))
		}
		for k, v := range ra.BBox {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, formats.Malformedf("coco: annotations[%d] (id %d): bbox is not finite", i, ra.ID)
			}
			a.BBox[k] = v
		}
		if err := parseSegmentation(ra.Segmentation, &a); err != nil {
			return nil, formats.Malformedf("coco: annotations[%d] (id %d): segmentation: %v", i, ra.ID, err)
		}
		f.Annotations[i] = a
	}
	return f, nil
}

func parseSegmentation(msg json.RawMessage, a *Annotation) error {
	s := bytes.TrimSpace(msg)
	if len(s) == 0 || bytes.Equal(s, []byte("null")) {
		return nil
	}
	if s[0] == '{' {
		a.RLE = true
		return nil
	}
	var polys [][]float64
	if err := json.Unmarshal(s, &polys); err != nil {
		return fmt.Errorf("expected a list of polygons or an RLE object: %v", err)
	}
	for k, p := range polys {
		if len(p)%2 != 0 {
			return fmt.Errorf("polygon %d has an odd number (%d) of coordinates", k, len(p))
		}
	}
	a.Polygons = polys
	return nil
}

// Options are DALI's readers.coco arguments that shape the samples.
type Options struct {
	LTRB                bool    // boxes as [l, t, r, b] instead of [x, y, w, h]
	Ratio               bool    // coordinates relative to the image width and height
	SkipEmpty           bool    // leave out images with no annotation (after the filters)
	IncludeCrowd        bool    // keep annotations with iscrowd = 1
	AvoidClassRemapping bool    // labels are the category ids as written
	SizeThreshold       float64 // drop annotations whose box width or height (pixels) is below it
	Polygons            bool    // fill Sample.Polygons and Sample.Vertices
	// Images, when not nil, selects the images by file_name, in this order (duplicates
	// repeat the sample); by default every image is read once, in increasing id order.
	Images []string
}

// Sample is one image and its objects.
type Sample struct {
	ImageID  int64
	FileName string
	Width    int
	Height   int
	Boxes    [][4]float32
	Labels   []int32
	// Polygons are [object index, first vertex, one past the last vertex] rows into
	// Vertices ([x, y], relative when Options.Ratio).
	Polygons [][3]int32
	Vertices [][2]float32
}

// Samples builds the per-image samples. Annotations naming an image or category the
// file does not list are errors (wrapping formats.ErrMalformed), as are duplicate
// image ids and file names in Options.Images the file does not list.
func (f *File) Samples(opt Options) ([]Sample, error) {
	labels := map[int64]int32{}
	if !opt.AvoidClassRemapping {
		ids := make([]int64, 0, len(f.Categories))
		for _, c := range f.Categories {
			if _, dup := labels[c.ID]; dup {
				return nil, formats.Malformedf("coco: category id %d is listed twice", c.ID)
			}
			labels[c.ID] = 0
			ids = append(ids, c.ID)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for i, id := range ids {
			labels[id] = int32(i + 1)
		}
	}
	byID := make(map[int64]int, len(f.Images))
	for i, im := range f.Images {
		if _, dup := byID[im.ID]; dup {
			return nil, formats.Malformedf("coco: image id %d is listed twice", im.ID)
		}
		byID[im.ID] = i
	}
	objs := make([][]int, len(f.Images)) // annotation indices per image, in file order
	for k, a := range f.Annotations {
		i, ok := byID[a.ImageID]
		if !ok {
			return nil, formats.Malformedf("coco: annotation id %d names image id %d, which \"images\" does not list", a.ID, a.ImageID)
		}
		if !opt.AvoidClassRemapping {
			if _, ok := labels[a.CategoryID]; !ok {
				return nil, formats.Malformedf("coco: annotation id %d names category id %d, which \"categories\" does not list", a.ID, a.CategoryID)
			}
		} else if a.CategoryID < math.MinInt32 || a.CategoryID > math.MaxInt32 {
			return nil, formats.Malformedf("coco: annotation id %d: category id %d does not fit a 32-bit label", a.ID, a.CategoryID)
		}
		if a.IsCrowd && !opt.IncludeCrowd {
			continue
		}
		if a.BBox[2] < opt.SizeThreshold || a.BBox[3] < opt.SizeThreshold {
			continue
		}
		objs[i] = append(objs[i], k)
	}
	var order []int
	if opt.Images != nil {
		byName := make(map[string]int, len(f.Images))
		for i, im := range f.Images {
			if _, dup := byName[im.FileName]; !dup {
				byName[im.FileName] = i
			}
		}
		for _, name := range opt.Images {
			i, ok := byName[name]
			if !ok {
				return nil, fmt.Errorf("coco: image %q is not in the annotation file", name)
			}
			order = append(order, i)
		}
	} else {
		order = make([]int, len(f.Images))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(x, y int) bool { return f.Images[order[x]].ID < f.Images[order[y]].ID })
	}
	out := make([]Sample, 0, len(order))
	for _, i := range order {
		im := f.Images[i]
		if opt.SkipEmpty && len(objs[i]) == 0 {
			continue
		}
		s := Sample{ImageID: im.ID, FileName: im.FileName, Width: im.Width, Height: im.Height}
		sx, sy := 1.0, 1.0
		if opt.Ratio {
			sx, sy = 1/float64(im.Width), 1/float64(im.Height)
		}
		for n, k := range objs[i] {
			a := &f.Annotations[k]
			x, y, w, h := a.BBox[0]*sx, a.BBox[1]*sy, a.BBox[2]*sx, a.BBox[3]*sy
			if opt.LTRB {
				w, h = x+w, y+h
			}
			s.Boxes = append(s.Boxes, [4]float32{float32(x), float32(y), float32(w), float32(h)})
			l := int32(a.CategoryID)
			if !opt.AvoidClassRemapping {
				l = labels[a.CategoryID]
			}
			s.Labels = append(s.Labels, l)
			if opt.Polygons {
				for _, p := range a.Polygons {
					first := int32(len(s.Vertices))
					for v := 0; v+1 < len(p); v += 2 {
						s.Vertices = append(s.Vertices, [2]float32{float32(p[v] * sx), float32(p[v+1] * sy)})
					}
					s.Polygons = append(s.Polygons, [3]int32{int32(n), first, int32(len(s.Vertices))})
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}
