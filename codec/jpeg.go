package codec

/*
#cgo LDFLAGS: -ljpeg
#cgo noescape gd_jpeg_header
#cgo nocallback gd_jpeg_header
#cgo noescape gd_jpeg_decode
#cgo nocallback gd_jpeg_decode
#cgo noescape gd_emit
#cgo nocallback gd_emit
#include <stdio.h>
#include <jpeglib.h>
#include "gdjpeg.h"
#ifdef __GLIBC__
#include <malloc.h>
static void gd_release_memory(void) { malloc_trim(0); }
#else
static void gd_release_memory(void) {}
#endif
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// jpegState owns one libjpeg decompress object, created on first use and reused for
// every image the Decoder sees.
type jpegState struct {
	st *C.gd_jpeg
}

func (js *jpegState) free() {
	if js.st != nil {
		C.gd_jpeg_free(js.st)
		js.st = nil
	}
}

// libjpeg returns the Decoder's libjpeg state, creating it on first use.
func (d *Decoder) libjpeg() (*C.gd_jpeg, error) {
	if d.closed {
		return nil, ErrClosed
	}
	if d.jpeg == nil {
		// The C state is freed by Close, or by the garbage collector when the Decoder
		// is dropped without Close.
		d.jpeg = &jpegState{}
		d.cleanup = runtime.AddCleanup(d, (*jpegState).free, d.jpeg)
	}
	if d.jpeg.st == nil {
		d.jpeg.st = C.gd_jpeg_new()
		if d.jpeg.st == nil {
			return nil, fmt.Errorf("JPEG: cannot create a libjpeg decompress object (out of memory)")
		}
	}
	return d.jpeg.st, nil
}

// releaseCMemory returns memory libjpeg freed to the system.
func releaseCMemory() { C.gd_release_memory() }

func bytePtr(b []byte) *C.uchar { return (*C.uchar)(unsafe.Pointer(unsafe.SliceData(b))) }

// jpegError turns the C side's status and message into a Go error.
func jpegError(st *C.gd_jpeg, rc C.int) error {
	msg := C.GoString(&st.msg[0])
	switch {
	case rc == 1:
		return &decodeError{msg: "JPEG: " + msg + " (truncated?)", kind: ErrTruncated}
	case strings.Contains(msg, "Backing store not supported"):
		// libjpeg wanted more than max_memory_to_use for its whole-image buffers.
		return &decodeError{msg: fmt.Sprintf("JPEG: decoding needs more working memory than max_image_pixels x %d bytes allows (libjpeg: %s)", WorkBytesPerPixel, msg), kind: ErrTooManyPixels}
	case strings.HasPrefix(msg, "Unsupported JPEG data precision"):
		return fmt.Errorf("JPEG: %s: only 8-bit JPEGs are supported", msg)
	}
	return fmt.Errorf("JPEG: %s", msg)
}

var jpegColorSpaces = map[C.J_COLOR_SPACE]string{
	C.JCS_GRAYSCALE: "Gray",
	C.JCS_RGB:       "RGB",
	C.JCS_YCbCr:     "YCbCr",
	C.JCS_CMYK:      "CMYK",
	C.JCS_YCCK:      "YCCK",
}

func (d *Decoder) probeJPEG(data []byte) (Info, error) {
	st, err := d.libjpeg()
	if err != nil {
		return Info{}, err
	}
	if rc := C.gd_jpeg_header(st, bytePtr(data), C.size_t(len(data))); rc != 0 {
		return Info{}, jpegError(st, rc)
	}
	h := &st.hdr
	cs, ok := jpegColorSpaces[C.J_COLOR_SPACE(h.color_space)]
	if !ok {
		cs = "Unknown"
	}
	return Info{
		Format:      FormatJPEG,
		Width:       int(h.width),
		Height:      int(h.height),
		Components:  int(h.components),
		ColorSpace:  cs,
		Orientation: tiffOrientation(jpegExif(data)),
		Progressive: h.progressive != 0,
		Arithmetic:  h.arithmetic != 0,
		WorkBytes:   jpegWorkBytes(h.progressive != 0, int64(h.coef_bytes)),
		minData:     jpegMinData(h.progressive != 0, h.arithmetic != 0, int64(h.blocks)),
	}, nil
}

func (d *Decoder) decodeJPEG(data []byte, info Info, p plan, opt Options, dst []byte) error {
	st, err := d.libjpeg()
	if err != nil {
		return err
	}
	out := C.GD_OUT_RGB
	switch opt.Out {
	case BGR:
		out = C.GD_OUT_BGR
	case Gray:
		out = C.GD_OUT_GRAY
	}
	st.job = C.gd_job{
		image_w:     C.uint(info.Width),
		image_h:     C.uint(info.Height),
		scale_num:   C.int(p.scale),
		scaled_w:    C.uint(p.sw),
		scaled_h:    C.uint(p.sh),
		rx:          C.uint(p.rx),
		ry:          C.uint(p.ry),
		rw:          C.uint(p.rw),
		rh:          C.uint(p.rh),
		out:         C.int(out),
		orientation: C.int(p.orient),
		max_pixels:  C.longlong(opt.MaxPixels),
		fast_idct:   boolC(opt.FastIDCT),
		rule:        C.int(p.rule),
		max_memory:  C.longlong(jpegMaxMemory(opt)),
		dst_x:       C.uint(p.dx),
		dst_y:       C.uint(p.dy),
		dst_pitch:   C.uint(p.dw),
	}
	rc := C.gd_jpeg_decode(st, bytePtr(data), C.size_t(len(data)), bytePtr(dst), C.size_t(len(dst)))
	if rc != 0 {
		return jpegError(st, rc)
	}
	return nil
}

// jpegWorkBytes: a progressive image is decoded from a whole-image coefficient buffer;
// a sequential one row by row.
func jpegWorkBytes(progressive bool, coef int64) int64 {
	if progressive {
		return coef
	}
	return 0
}

// jpegMaxMemory is the bound libjpeg enforces itself, for what the header does not show
// (a sequential image with non-interleaved scans also buffers every coefficient): the
// working-memory bound plus room for libjpeg's row buffers.
func jpegMaxMemory(opt Options) int64 {
	if opt.MaxPixels <= 0 {
		return 0
	}
	return opt.MaxPixels*WorkBytesPerPixel + 64<<20
}

// Pixel layouts of emit's source (gdjpeg.h's GD_PF_*).
const (
	pfGray    = C.GD_PF_GRAY
	pfRGB     = C.GD_PF_RGB
	pfBGR     = C.GD_PF_BGR
	pfRGBX    = C.GD_PF_RGBX
	pfCMYK    = C.GD_PF_CMYK
	pfCMYKInv = C.GD_PF_CMYK_INV
)

// Colour conversions of emit (colourRule).
const (
	rulePIL      = C.GD_RULE_PIL
	ruleOpenCV   = C.GD_RULE_OPENCV
	ruleLibPNG   = C.GD_RULE_LIBPNG
	ruleDALIJPEG = C.GD_RULE_DALI_JPEG
)

func pfChannels(pf int) int {
	switch pf {
	case pfGray:
		return 1
	case pfRGB, pfBGR:
		return 3
	}
	return 4
}

// emit writes the plan's region of a decoded source image (layout pf, stride bytes per
// row) into dst, converted to out and oriented. It checks the bounds the C side relies on.
func emit(src []byte, stride, pf int, p plan, out OutputType, dst []byte) error {
	ic := pfChannels(pf)
	if p.rw <= 0 || p.rh <= 0 || stride < (p.rx+p.rw)*ic ||
		len(src) < (p.ry+p.rh-1)*stride+(p.rx+p.rw)*ic || len(dst) < p.ow*p.oh*p.oc {
		return fmt.Errorf("internal error: pixel buffer smaller than the image")
	}
	o := C.GD_OUT_RGB
	switch out {
	case BGR:
		o = C.GD_OUT_BGR
	case Gray:
		o = C.GD_OUT_GRAY
	}
	C.gd_emit(bytePtr(src), C.size_t(stride), C.int(pf), C.uint(p.rx), C.uint(p.ry),
		C.uint(p.rw), C.uint(p.rh), C.int(p.orient), C.int(o), C.int(p.rule), bytePtr(dst))
	return nil
}

func boolC(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
