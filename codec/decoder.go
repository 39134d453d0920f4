package codec

import (
	"fmt"
	"runtime"
)

// Decoder decodes images, reusing its libjpeg decompress object and scratch buffers from
// one image to the next. It is not safe for concurrent use: give each worker its own.
// Close releases the C state; a Decoder that is dropped without Close is cleaned up by
// the garbage collector.
type Decoder struct {
	jpeg    *jpegState
	cleanup runtime.Cleanup
	closed  bool
	scratch []byte // grow-only staging for formats decoded by Go code (see Trim)
	// lastWork is the largest working memory of a JPEG decoded since the last Trim.
	lastWork int64
}

// NewDecoder returns a Decoder. Its libjpeg state is created on first use (the zero
// Decoder works too).
func NewDecoder() *Decoder { return &Decoder{} }

// Close frees the Decoder's C state. Later calls fail with ErrClosed. Close is
// idempotent.
func (d *Decoder) Close() {
	if d.closed {
		return
	}
	d.closed = true
	if d.jpeg != nil {
		d.cleanup.Stop()
		d.jpeg.free()
	}
	d.scratch = nil
}

// decodeError is an error whose text is exactly msg and which matches kind with
// errors.Is.
type decodeError struct {
	msg  string
	kind error
}

func (e *decodeError) Error() string { return e.msg }
func (e *decodeError) Unwrap() error { return e.kind }

// Probe reads the header of an encoded image: format, stored size, colour model and EXIF
// orientation. It decodes no pixels and allocates nothing proportional to the image.
func (d *Decoder) Probe(data []byte) (Info, error) {
	if d.closed {
		return Info{}, ErrClosed
	}
	f := DetectFormat(data)
	var (
		info Info
		err  error
	)
	switch f {
	case FormatJPEG:
		info, err = d.probeJPEG(data)
	case FormatPNG:
		info, err = probePNG(data)
	case FormatGIF:
		info, err = probeGIF(data)
	case FormatWebP:
		info, err = probeWebP(data)
	case FormatTIFF:
		info, err = probeTIFF(data)
	case FormatBMP:
		info, err = probeBMP(data)
	case FormatPNM:
		info, err = probePNM(data)
	default:
		return Info{}, unknownFormatError(data)
	}
	if err != nil {
		return Info{}, err
	}
	if info.Width <= 0 || info.Height <= 0 || info.Width > maxDimension || info.Height > maxDimension {
		return Info{}, fmt.Errorf("%s: invalid image size %dx%d", f, info.Width, info.Height)
	}
	return info, nil
}

// OutputSize returns the exact size Decode produces for data with these options:
// width, height and channels of the HWC result. info may be the zero Info, in which case
// data is probed.
func (d *Decoder) OutputSize(data []byte, info Info, opt Options) (w, h, c int, err error) {
	if d.closed {
		return 0, 0, 0, ErrClosed
	}
	if info.Format == FormatUnknown {
		if info, err = d.Probe(data); err != nil {
			return 0, 0, 0, err
		}
	}
	p, err := makePlan(info, opt, info.Format == FormatJPEG)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := checkDataFits(data, info); err != nil {
		return 0, 0, 0, err
	}
	return p.dw, p.dh, p.oc, nil
}

// Decode decodes data into dst[:w*h*c] as interleaved HWC uint8 and returns that size
// (the one OutputSize reports). info must come from Probe of the same data, or be the
// zero Info to have Decode probe. Nothing proportional to the image is allocated before
// the header has been checked against opt.MaxPixels.
func (d *Decoder) Decode(data []byte, info Info, opt Options, dst []byte) (w, h, c int, err error) {
	if d.closed {
		return 0, 0, 0, ErrClosed
	}
	if info.Format == FormatUnknown {
		if info, err = d.Probe(data); err != nil {
			return 0, 0, 0, err
		}
	} else if f := DetectFormat(data); f != info.Format {
		if f == FormatUnknown {
			return 0, 0, 0, unknownFormatError(data)
		}
		return 0, 0, 0, fmt.Errorf("info describes a %s image but the data is %s", info.Format, f)
	}
	p, err := makePlan(info, opt, info.Format == FormatJPEG)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := checkDataFits(data, info); err != nil {
		return 0, 0, 0, err
	}
	if n := p.dw * p.dh * p.oc; len(dst) < n {
		return 0, 0, 0, fmt.Errorf("destination holds %d bytes, the %dx%dx%d image needs %d", len(dst), p.dw, p.dh, p.oc, n)
	} else if opt.Low16 != nil && info.Sixteen && len(opt.Low16) < n {
		return 0, 0, 0, fmt.Errorf("low-byte destination holds %d bytes, the %dx%dx%d image needs %d", len(opt.Low16), p.dw, p.dh, p.oc, n)
	}
	switch info.Format {
	case FormatJPEG:
		d.lastWork = max(d.lastWork, info.WorkBytes+jpegRowBytes(p.sw, p.oc))
		err = d.decodeJPEG(data, info, p, opt, dst)
	case FormatPNM:
		err = d.decodePNM(data, info, p, opt.Out, dst)
	case FormatBMP:
		err = d.decodeBMP(data, info, p, opt.Out, dst)
	default:
		err = d.decodeStd(data, info, p, opt, dst)
	}
	if err != nil {
		return 0, 0, 0, err
	}
	return p.dw, p.dh, p.oc, nil
}

// jpegRowBytes is what libjpeg's row buffers (the components' sample rows, the
// upsampler's and the colour converter's) take for an image decoded w pixels wide into c
// channels.
func jpegRowBytes(w, c int) int64 { return int64(w) * int64(c) * 64 }

// WorkBytes is the most a decode of the image takes besides its output: the format's
// whole-image intermediate (info.WorkBytes) and, for a JPEG, libjpeg's row buffers at
// full width, for an output of c channels (the memory plan's decoder work).
func WorkBytes(info Info, c int) int64 {
	if info.Format == FormatJPEG {
		return info.WorkBytes + jpegRowBytes(info.Width, c)
	}
	return info.WorkBytes
}

// Trim drops the Decoder's scratch buffer when it has grown above limit bytes, and
// asks the C allocator to return freed memory to the system after a decode that
// needed more than limit (libjpeg's whole-image buffers, freed when each image ends,
// may otherwise stay in malloc's arenas).
func (d *Decoder) Trim(limit int) {
	if cap(d.scratch) > limit {
		d.scratch = nil
	}
	if d.lastWork > int64(limit) {
		d.lastWork = 0
		releaseCMemory()
	}
}

// ScratchBytes is the capacity of the scratch buffer the Decoder holds.
func (d *Decoder) ScratchBytes() int { return cap(d.scratch) }

// grow returns the Decoder's scratch buffer resized to n bytes, reallocating only when
// it has to grow.
func (d *Decoder) grow(n int) []byte {
	if cap(d.scratch) < n {
		d.scratch = make([]byte, n)
	}
	return d.scratch[:n]
}
