package codec

/*
#cgo LDFLAGS: -ljpeg
#cgo noescape gd_jpegenc_roundtrip
#cgo nocallback gd_jpegenc_roundtrip
#include <stdlib.h>
#include "gdjpegenc.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// JPEGDistorter compresses RGB images with libjpeg at a quality and decompresses them
// again (DALI's jpeg_compression_distortion). One per worker: it keeps its libjpeg
// objects and the encoded-bytes buffer between images, so a round trip allocates
// nothing once the buffer has grown to the largest image. Not safe for concurrent use.
type JPEGDistorter struct {
	st  *C.gd_jpegenc
	msg [256]C.char
}

// NewJPEGDistorter returns a distorter; Close releases its C memory.
func NewJPEGDistorter() (*JPEGDistorter, error) {
	st := C.gd_jpegenc_new()
	if st == nil {
		return nil, fmt.Errorf("jpeg encoder: out of memory")
	}
	d := &JPEGDistorter{st: st}
	runtime.SetFinalizer(d, (*JPEGDistorter).Close)
	return d, nil
}

// Close frees the libjpeg state; the distorter must not be used afterwards.
func (d *JPEGDistorter) Close() {
	if d.st != nil {
		C.gd_jpegenc_free(d.st)
		d.st = nil
	}
}

// RoundTrip encodes the w x h RGB image src (HWC) at quality 1..100 (4:2:0 chroma
// subsampling, libjpeg's standard tables scaled by quality, baseline) and writes the
// decoded image into dst (same layout; it may be src).
func (d *JPEGDistorter) RoundTrip(dst, src []byte, w, h, quality int) error {
	if d.st == nil {
		return fmt.Errorf("jpeg encoder: used after Close")
	}
	if quality < 1 || quality > 100 {
		return fmt.Errorf("jpeg quality must be in [1, 100], got %d", quality)
	}
	if w <= 0 || h <= 0 || w > 65500 || h > 65500 {
		return fmt.Errorf("jpeg encoder: a %dx%d image cannot be encoded as JPEG (1 to 65500 pixels a side)", w, h)
	}
	n := w * h * 3
	if len(src) < n || len(dst) < n {
		return fmt.Errorf("jpeg encoder: buffers of %d and %d bytes for a %dx%d RGB image", len(src), len(dst), w, h)
	}
	rc := C.gd_jpegenc_roundtrip(d.st, (*C.uchar)(unsafe.Pointer(unsafe.SliceData(src))), C.uint(w), C.uint(h),
		C.int(quality), (*C.uchar)(unsafe.Pointer(unsafe.SliceData(dst))), &d.msg[0], C.size_t(len(d.msg)))
	runtime.KeepAlive(src)
	runtime.KeepAlive(dst)
	if rc != 0 {
		return fmt.Errorf("jpeg round trip: %s", C.GoString(&d.msg[0]))
	}
	return nil
}

// EncodedSize is the size in bytes of the last image RoundTrip encoded.
func (d *JPEGDistorter) EncodedSize() int { return int(C.gd_jpegenc_encoded_size(d.st)) }
