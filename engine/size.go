package engine

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Pipeline-level maxima, checked when a description is parsed (docs/pipeline.md). They
// keep a typo (num_threads 100000) from exhausting the process's threads or memory.
const (
	MaxNumThreads         = 256
	MaxBatchSize          = 1 << 16
	MaxPrefetchQueueDepth = 64
)

// MaxNDim bounds the dimensions of every tensor godali hands out, a dense batch's leading
// sample dimension included: numpy 1.x takes at most 32 (NPY_MAXDIMS; numpy 2.x 64) and
// crashes or fails without a message beyond that, so the engine refuses more at build (a
// schema's shape) or per sample (a shape known at run time), naming the operator.
const MaxNDim = 32

// MaxSampleNDim bounds a sample's dimensions: a dense batch of such samples has MaxNDim.
const MaxSampleNDim = MaxNDim - 1

// CheckNDim refuses a sample of ndim dimensions, more than MaxSampleNDim; what names the
// tensor ("output \"x\"", "the array"). Callers give the error their status.
func CheckNDim(what string, ndim int) error {
	if ndim <= MaxSampleNDim {
		return nil
	}
	return fmt.Errorf("%s would have %d dimensions; godali's outputs have at most %d per sample (%d with the batch's, numpy's limit)", what, ndim, MaxSampleNDim, MaxNDim)
}

// mulSize returns n times every dimension, or ok=false when a factor is negative or the
// product does not fit an int. Every size computed from shapes, dtypes and counts goes
// through it.
func mulSize(n int, dims ...int) (int, bool) {
	if n < 0 {
		return 0, false
	}
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, false
		}
		n = int(lo)
	}
	return n, true
}

// checkedBytes is the size of a tensor of shape (every dimension known) and dtype d.
func checkedBytes(d DType, shape []int) (int, bool) { return mulSize(d.Size(), shape...) }

// imagePixels returns height x width of an image-layout shape (HWC, CHW), or ok=false
// when the layout is not an image's or a dimension is unknown.
func imagePixels(layout string, shape []int) (h, w int, ok bool) {
	if len(shape) != 3 {
		return 0, 0, false
	}
	switch layout {
	case "HWC":
		h, w = shape[0], shape[1]
	case "CHW":
		h, w = shape[1], shape[2]
	default:
		return 0, 0, false
	}
	return h, w, h >= 0 && w >= 0
}

// sizeArgs are the arguments that set an operator's output size; limit errors name the
// ones a node was given.
var sizeArgs = []string{"size", "resize_x", "resize_y", "resize_shorter", "resize_longer",
	"max_size", "crop", "crop_h", "crop_w"}

func givenSizeArgs(a *Args) string {
	if a == nil {
		return ""
	}
	var names []string
	for _, n := range sizeArgs {
		if a.GivenConstant(n) {
			names = append(names, fmt.Sprintf("%q", n))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (argument " + strings.Join(names, ", ") + ")"
}

// checkOutputMeta checks, at build, the per-sample shape an operator declared for its
// output d: dimensions are >= 0 or -1 (unknown), an image is no larger than
// max_image_pixels (0: no limit), a sample's and a batch's byte sizes fit in memory
// arithmetic.
// MaxLayout bounds the layout of a data node, NUL included: the C ABI reports an output's
// layout in a char[GODALI_MAX_LAYOUT] (include/godali.h).
const MaxLayout = 16

func checkOutputMeta(n *Node, d *DataNode, maxPixels int64, batch int) error {
	m := d.Meta
	where := describe(n.Name, n.OpName)
	if len(m.Layout) >= MaxLayout {
		return Errorf(StatusInvalidPipeline, "%s: output %q would have layout %q: at most %d letters", where, d.Name, m.Layout, MaxLayout-1)
	}
	if err := CheckNDim(fmt.Sprintf("output %q", d.Name), len(m.Shape)); err != nil {
		return Errorf(StatusInvalidPipeline, "%s: %v", where, err)
	}
	for _, k := range m.Shape {
		if k < -1 {
			return Errorf(StatusInvalidPipeline, "%s: output %q would have shape %v%s: a negative size", where, d.Name, m.Shape, givenSizeArgs(n.Args))
		}
	}
	if h, w, ok := imagePixels(m.Layout, m.Shape); ok && maxPixels > 0 {
		if px, ok := mulSize(h, w); !ok || int64(px) > maxPixels {
			return Errorf(StatusInvalidPipeline, "%s: output %q would be %dx%d images, more than max_image_pixels=%d pixels%s; lower the size or raise max_image_pixels",
				where, d.Name, w, h, maxPixels, givenSizeArgs(n.Args))
		}
	}
	if !m.Static() {
		return nil
	}
	per, ok := checkedBytes(m.DType, m.Shape)
	if ok {
		_, ok = mulSize(per, batch)
	}
	if !ok {
		return Errorf(StatusInvalidPipeline, "%s: output %q of shape %v (%s) times batch_size %d does not fit in memory%s",
			where, d.Name, m.Shape, m.DType, batch, givenSizeArgs(n.Args))
	}
	return nil
}

// checkSampleSize checks a sample's output shape, set by Setup, before memory is given to
// it: the error fails that sample (a data error naming its file), never the process. op
// names the operator that set the shape ("" when none did: a fed sample).
func checkSampleSize(t *Tensor, lim *Limits, op string) (int, error) {
	if len(t.Shape) > MaxSampleNDim { // the message is made only then: this runs per sample and node
		what := "the sample"
		if op != "" {
			what = op + " output"
		}
		return 0, &Error{Status: StatusData, Err: CheckNDim(what, len(t.Shape))}
	}
	need, ok := checkedBytes(t.DType, t.Shape)
	if !ok {
		return 0, Errorf(StatusData, "output of shape %v (%s) is too large to allocate", t.Shape, t.DType)
	}
	if h, w, ok := imagePixels(t.Layout, t.Shape); ok && lim != nil && lim.MaxImagePixels > 0 {
		if px, ok := mulSize(h, w); !ok || int64(px) > lim.MaxImagePixels {
			return 0, Errorf(StatusData, "output would be a %dx%d image, more than max_image_pixels=%d pixels", w, h, lim.MaxImagePixels)
		}
	}
	return need, nil
}
