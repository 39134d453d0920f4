package readers

import (
	"errors"
	"io"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats"
	"github.com/godali/godali/formats/coco"
	"github.com/godali/godali/source"
	"github.com/godali/godali/source/remote"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.coco",
		Doc: "Reads a COCO data set: the images under file_root listed in annotations_file (instances_*.json), " +
			"in increasing image id order (or the order of images). Outputs the encoded bytes (uint8, 1-D), the " +
			"boxes (float32 [N, 4]: x, y, width, height, or left, top, right, bottom with ltrb; pixels, or relative " +
			"to the image size with ratio), the labels (int32 [N]: category ids mapped to 1..number of categories " +
			"in id order, unless avoid_class_remapping), then with polygon_masks the polygons (int32 [P, 3]: object " +
			"index, first vertex, one past the last vertex) and vertices (float32 [V, 2]: x, y), and with image_ids " +
			"the image's id (int32 [1]). N differs between samples: the outputs are ragged.",
		MinInputs: 0, MaxInputs: 0, IsReader: true,
		Outputs: []string{"images", "bboxes", "labels", "polygons", "vertices", "pixelwise_masks", "image_ids"},
		OutputIf: map[string]engine.OutputCond{"polygons": engine.IfArg("polygon_masks"), "vertices": engine.IfArg("polygon_masks"),
			"pixelwise_masks": engine.IfArg("pixelwise_masks"), "image_ids": engine.IfArg("image_ids")},
		Args: append([]engine.ArgSpec{
			{Name: "file_root", Type: engine.ArgString, Required: true, Doc: "directory the images' file_name entries are relative to"},
			{Name: "annotations_file", Type: engine.ArgString, Required: true, Doc: "the COCO annotation JSON file"},
			{Name: "ltrb", Type: engine.ArgBool, Default: false, Doc: "boxes as [left, top, right, bottom] (default: [x, y, width, height])"},
			{Name: "ratio", Type: engine.ArgBool, Default: false, Doc: "coordinates relative to the image's width and height (from the annotation file)"},
			{Name: "skip_empty", Type: engine.ArgBool, Default: false, Doc: "leave out images without objects (after the filters)"},
			{Name: "size_threshold", Type: engine.ArgFloat, Default: 0.1, Doc: "drop objects whose box is narrower or lower than this many pixels"},
			{Name: "include_iscrowd", Type: engine.ArgBool, Default: true, Doc: "keep objects marked iscrowd"},
			{Name: "avoid_class_remapping", Type: engine.ArgBool, Default: false, Doc: "labels are the category ids as written (default: 1..number of categories, 0 left for the background)"},
			{Name: "image_ids", Type: engine.ArgBool, Default: false, Doc: "add an output with the image's id"},
			{Name: "images", Type: engine.ArgStringList, Doc: "file names (as in the annotation file) to read, in this order; duplicates repeat"},
			{Name: "polygon_masks", Type: engine.ArgBool, Default: false, Doc: "add the polygons and vertices outputs"},
			{Name: "pixelwise_masks", Type: engine.ArgBool, Default: false, Doc: "not supported by godali (use polygon_masks)"},
			{Name: "preprocessed_annotations", Type: engine.ArgString, Doc: "not supported by godali (give annotations_file)"},
			{Name: "save_preprocessed_annotations", Type: engine.ArgBool, Default: false, Doc: "not supported by godali"},
			{Name: "save_preprocessed_annotations_dir", Type: engine.ArgString, Doc: "not supported by godali"},
			ShuffleAfterEpochArg,
			AllowOutsideRootArg,
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.coco", "cpu", newCocoReader)
}

type cocoReader struct {
	Base
	args    *engine.Args
	io      *readerIO // local paths, or s3://, az://, gs:// and http(s):// URLs
	opt     coco.Options
	samples []coco.Sample
	polys   bool
	ids     bool
}

func newCocoReader(a *engine.Args) (engine.Operator, error) {
	r := &cocoReader{args: a, polys: a.Bool("polygon_masks"), ids: a.Bool("image_ids")}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	var err error
	if r.io, err = newReaderIO(a); err != nil {
		return nil, err
	}
	for _, k := range []string{"pixelwise_masks", "save_preprocessed_annotations"} {
		if a.Bool(k) {
			return nil, a.Errorf(k, "not supported by godali")
		}
	}
	for _, k := range []string{"preprocessed_annotations", "save_preprocessed_annotations_dir"} {
		if a.Given(k) {
			return nil, a.Errorf(k, "not supported by godali; give annotations_file")
		}
	}
	if a.String("annotations_file") == "" {
		return nil, a.Errorf("annotations_file", "the COCO annotation JSON file is required")
	}
	if t := a.Float("size_threshold"); t < 0 || t != t {
		return nil, a.Errorf("size_threshold", "must be >= 0, got %g", t)
	}
	root := a.String("file_root")
	r.DigestPath = relToRoot(root)
	r.opt = coco.Options{LTRB: a.Bool("ltrb"), Ratio: a.Bool("ratio"), SkipEmpty: a.Bool("skip_empty"),
		IncludeCrowd: a.Bool("include_iscrowd"), AvoidClassRemapping: a.Bool("avoid_class_remapping"),
		SizeThreshold: a.Float("size_threshold"), Polygons: r.polys}
	if a.Given("images") {
		r.opt.Images = append([]string{}, a.Strings("images")...)
	}
	return r, nil
}

func (r *cocoReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	out := []engine.TensorMeta{
		{DType: engine.UInt8, Shape: []int{-1}},
		{DType: engine.Float32, Shape: []int{-1, 4}},
		{DType: engine.Int32, Shape: []int{-1}},
	}
	if r.polys {
		out = append(out, engine.TensorMeta{DType: engine.Int32, Shape: []int{-1, 3}}, engine.TensorMeta{DType: engine.Float32, Shape: []int{-1, 2}})
	}
	if r.ids {
		out = append(out, engine.TensorMeta{DType: engine.Int32, Shape: []int{1}})
	}
	return out, nil
}

func (r *cocoReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.args
	root, ann := a.String("file_root"), a.String("annotations_file")
	if !remote.IsRemote(root) {
		if err := checkDir(a, "file_root", root); err != nil {
			return err
		}
	}
	f, err := r.io.open(ann)
	if err != nil {
		return unreadable(a, "annotations_file", ann, err)
	}
	defer f.Close()
	file, err := coco.Parse(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		return listErrorf(a, "annotations_file %q: %v", ann, err)
	}
	samples, err := file.Samples(r.opt)
	if err != nil {
		if errors.Is(err, formats.ErrMalformed) {
			return listErrorf(a, "annotations_file %q: %v", ann, err)
		}
		return engine.Errorf(engine.StatusInvalidArgument, "%s: argument \"images\": %v", a.Where(), err)
	}
	scope := newListScope(a, "annotations_file", ann, root)
	entries := make([]engine.SampleRef, len(samples))
	for i, s := range samples {
		p := joinPath(root, s.FileName)
		if err := scope.check(s.FileName, p); err != nil {
			return listErrorf(a, "%v", err)
		}
		entries[i] = engine.SampleRef{Path: p}
	}
	if err := r.SetSamples(entries, "images"); err != nil {
		return err
	}
	r.samples = samples
	return nil
}

// Close stops the reader's remote requests (engine.Closer: the pipeline is destroyed).
func (r *cocoReader) Close() { r.io.close() }

// Interrupt makes the reader's remote requests in flight return (engine.Interrupter).
func (r *cocoReader) Interrupt() { r.io.interrupt() }

type cocoReaderState struct {
	f    source.File
	size int
}

func (r *cocoReader) NewWorkerState() any { return &cocoReaderState{} }

func (r *cocoReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*cocoReaderState)
	if st.f != nil { // Run was not reached for the previous sample
		st.f.Close()
		st.f = nil
	}
	f, err := openSample(r.io, ws)
	if err != nil {
		return err
	}
	st.f, st.size = f, int(f.Size())
	s := &r.samples[ws.Ref.Index]
	shapes := [][]int{{st.size}, {len(s.Boxes), 4}, {len(s.Labels)}}
	if r.polys {
		shapes = append(shapes, []int{len(s.Polygons), 3}, []int{len(s.Vertices), 2})
	}
	if r.ids {
		shapes = append(shapes, []int{1})
	}
	for i := range ws.Out {
		ws.Out[i].SetShape(shapes[i]...)
	}
	return nil
}

func (r *cocoReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*cocoReaderState)
	defer func() { st.f.Close(); st.f = nil }()
	if err := readSample(st.f, ws.Out[0].Data); err != nil {
		return err
	}
	s := &r.samples[ws.Ref.Index]
	// The outputs follow Infer's order; a node may name fewer of them.
	out := func(k int) []byte {
		if k < len(ws.Out) {
			return ws.Out[k].Data
		}
		return nil
	}
	if d := out(1); d != nil {
		for i, b := range s.Boxes {
			for c, v := range b {
				engine.WriteScalar(d[(4*i+c)*4:], engine.Float32, float64(v))
			}
		}
	}
	if d := out(2); d != nil {
		for i, l := range s.Labels {
			engine.WriteScalar(d[i*4:], engine.Int32, float64(l))
		}
	}
	k := 3
	if r.polys {
		if d := out(3); d != nil {
			for i, p := range s.Polygons {
				for c, v := range p {
					engine.WriteScalar(d[(3*i+c)*4:], engine.Int32, float64(v))
				}
			}
		}
		if d := out(4); d != nil {
			for i, v := range s.Vertices {
				engine.WriteScalar(d[(2*i)*4:], engine.Float32, float64(v[0]))
				engine.WriteScalar(d[(2*i+1)*4:], engine.Float32, float64(v[1]))
			}
		}
		k = 5
	}
	if d := out(k); r.ids && d != nil {
		engine.WriteScalar(d, engine.Int32, float64(s.ImageID))
	}
	return nil
}
