package video

/*
#cgo noescape gdv_decode
#cgo nocallback gdv_decode
#cgo noescape gdv_convert
#cgo nocallback gdv_convert
#cgo noescape gdv_next_packet
#cgo nocallback gdv_next_packet
#cgo nocallback gdv_seek
#cgo noescape gdv_open
#cgo nocallback gdv_open
#cgo noescape gdv_read_packet
#cgo nocallback gdv_read_packet
#cgo nocallback gdv_annexb
#include <stdlib.h>
#include <string.h>
#include "gdvideo.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"syscall"
	"unsafe"
)

// Info describes a file's video stream.
type Info struct {
	Width, Height int
	TimeBase      [2]int // num, den: seconds per timestamp unit
	FrameRate     [2]int // the container's average frame rate (0/0 when unknown)
	Rotation      float64
	Codec, PixFmt string
	// ColorSpace is the stream's colour matrix as FFmpeg numbers it (AVColorSpace: 1
	// BT.709, 5 and 6 BT.601, 2 unspecified); FullRange: full-range (JPEG) levels.
	ColorSpace int
	FullRange  bool
}

// File is an open video: its demuxer and decoder. One goroutine at a time.
type File struct {
	c    *C.gdv_file
	Info Info

	// MaxPixels (> 0) bounds a decoded frame's width x height, as read by the next
	// Reopen: the decoder refuses a larger frame before allocating it, even one larger
	// than the container's header says (FFmpeg's max_pixels). Opening does not refuse
	// a header that declares larger frames: the caller checks Info (CheckPixels) and
	// says which sample it is.
	MaxPixels int64

	mem     unsafe.Pointer // C copy of the bytes (OpenBytes), kept until Close
	memCap  int
	live    bool // the decoder has decoded up to lastFrame and can go on from there
	lastIdx int
	decoded int // frames the decoder returned to ReadFrames (tests)

	cinfo C.gdv_info
	cerr  [256]C.char
}

// Open opens a video file by path. threads bounds the decoder's own threads (1: the
// caller's goroutine only; godali's pipeline workers decode different samples in
// parallel, so they ask for 1).
func Open(path string, threads int) (*File, error) {
	f := &File{}
	if err := f.Reopen(path, threads); err != nil {
		return nil, err
	}
	return f, nil
}

// Reopen closes what f had open and opens path instead (a worker's File is reused from
// one sample to the next).
func (f *File) Reopen(path string, threads int) error {
	if err := Load(); err != nil {
		return err
	}
	f.closeStream()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return f.open(cpath, nil, 0, threads)
}

// OpenBytes opens an encoded video held in memory; the bytes are copied into C memory
// that Reopen reuses.
func OpenBytes(data []byte, threads int) (*File, error) {
	f := &File{}
	if err := f.ReopenBytes(data, threads); err != nil {
		return nil, err
	}
	return f, nil
}

// ReopenBytes closes what f had open and opens data instead, reusing f's copy buffer
// when it is large enough.
func (f *File) ReopenBytes(data []byte, threads int) error {
	if err := Load(); err != nil {
		return err
	}
	f.closeStream()
	if len(data) == 0 {
		return errors.New("empty input: no video data")
	}
	if f.memCap < len(data) {
		C.free(f.mem)
		f.mem = C.malloc(C.size_t(len(data)))
		if f.mem == nil {
			f.memCap = 0
			return fmt.Errorf("out of memory copying %d bytes of video", len(data))
		}
		f.memCap = len(data)
	}
	copy(unsafe.Slice((*byte)(f.mem), len(data)), data)
	return f.open(nil, (*C.uint8_t)(f.mem), len(data), threads)
}

func (f *File) open(path *C.char, mem *C.uint8_t, n, threads int) error {
	// The C results land in f's own fields: locals passed to C would move to the heap.
	info := &f.cinfo
	if r := C.gdv_open(path, mem, C.size_t(n), C.int(threads), C.int64_t(max(f.MaxPixels, 0)), &f.c, info, &f.cerr[0], C.int(len(f.cerr))); r != 0 {
		f.c = nil
		return errors.New(C.GoString(&f.cerr[0]))
	}
	f.Info = Info{Width: int(info.width), Height: int(info.height),
		TimeBase:  [2]int{int(info.tb_num), int(info.tb_den)},
		FrameRate: [2]int{int(info.fr_num), int(info.fr_den)},
		Rotation:  float64(info.rotation), ColorSpace: int(info.color_space), FullRange: info.full_range != 0,
		Codec: keepString(f.Info.Codec, info.codec[:]), PixFmt: keepString(f.Info.PixFmt, info.pix_fmt[:])}
	f.live, f.lastIdx = false, -1
	if f.Info.Width <= 0 || f.Info.Height <= 0 {
		f.closeStream()
		if f.MaxPixels > 0 {
			// A stream whose size only its frames tell (a raw MJPEG or H.264 stream): the
			// probing decoder refused the first frame, or it is not a video.
			return pixelsError(fmt.Sprintf("the video stream has no frame size in its header, and its first frame did not decode within max_image_pixels=%d pixels (larger frames, or not a video)", f.MaxPixels))
		}
		return fmt.Errorf("the video stream has no frame size (%dx%d)", f.Info.Width, f.Info.Height)
	}
	return nil
}

// averrorInvalidData is FFmpeg's AVERROR_INVALIDDATA (-MKTAG('I', 'N', 'D', 'A')), a
// macro cgo cannot read.
const averrorInvalidData = -C.int('I' | 'N'<<8 | 'D'<<16 | 'A'<<24)

// ErrTooManyPixels marks videos whose frames exceed the caller's pixel bound
// (the pipeline's max_image_pixels): errors.Is(err, ErrTooManyPixels).
var ErrTooManyPixels = errors.New("video frames exceed max_image_pixels")

// pixelsError is an ErrTooManyPixels with its own message.
type pixelsError string

func (e pixelsError) Error() string        { return string(e) }
func (e pixelsError) Is(target error) bool { return target == ErrTooManyPixels }

// CheckPixels refuses frames of more than max pixels (0: no bound), before any is
// decoded: the error gives the frame size and names max_image_pixels.
func (i Info) CheckPixels(max int64) error {
	if px := int64(i.Width) * int64(i.Height); max > 0 && px > max {
		return pixelsError(fmt.Sprintf("video frames of %dx%d = %d pixels, more than max_image_pixels=%d (decompression bomb?)", i.Width, i.Height, px, max))
	}
	return nil
}

// SequencePixelsFactor is how many images' worth of pixels (max_image_pixels each) one
// sample's frames may hold together: a clip of real frames may exceed one image's budget
// (at the default, about 690 frames of 1080p fit), padding may not.
const SequencePixelsFactor = 8

// CheckSequence bounds one sample of frames frames, padded of them padding (repeated or
// empty frames the video lacks), before it is allocated: all of them together at most
// SequencePixelsFactor x max pixels, the padding at most max (0: no limit). The error
// wraps ErrTooManyPixels.
func (i Info) CheckSequence(frames, padded int, max int64) error {
	if err := i.CheckPixels(max); err != nil || max <= 0 || frames <= 0 {
		return err
	}
	px := int64(i.Width) * int64(i.Height)
	if px <= 0 {
		return nil
	}
	if padded > 0 && int64(padded) > max/px {
		return pixelsError(fmt.Sprintf("%d padding frames of %dx%d are %.4g pixels, more than max_image_pixels=%d (the padding of one sample)", padded, i.Width, i.Height, float64(padded)*float64(px), max))
	}
	limit := max
	if max <= math.MaxInt64/SequencePixelsFactor {
		limit = max * SequencePixelsFactor
	}
	if int64(frames) > limit/px {
		return pixelsError(fmt.Sprintf("%d frames of %dx%d are %.4g pixels, more than %d x max_image_pixels=%d for one sample (all its frames together)", frames, i.Width, i.Height, float64(frames)*float64(px), SequencePixelsFactor, max))
	}
	return nil
}

func (f *File) closeStream() {
	if f.c != nil {
		C.gdv_close(f.c)
		f.c = nil
	}
	f.live = false
}

// Close frees the demuxer, the decoder and the copy buffer.
func (f *File) Close() {
	f.closeStream()
	C.free(f.mem)
	f.mem, f.memCap = nil, 0
}

// FrameBytes is the size of one RGB frame.
func (f *File) FrameBytes() int { return f.Info.Width * f.Info.Height * 3 }

// Index lists a file's frames: their presentation times in order, and which are key
// frames (where decoding can start).
type Index struct {
	PTS  []int64 // sorted
	Keys []int32 // indices into PTS of the key frames, ascending

	keyPTS []int64 // scratch for ScanInto
}

// Len is the number of frames.
func (ix *Index) Len() int { return len(ix.PTS) }

// Scan reads every packet of the video stream (without decoding) to build the index,
// and leaves the file ready to decode from its beginning.
func (f *File) Scan() (*Index, error) {
	ix := &Index{}
	if err := f.ScanInto(ix); err != nil {
		return nil, err
	}
	return ix, nil
}

// ScanInto is Scan reusing ix's memory.
func (f *File) ScanInto(ix *Index) error {
	pts, keyPTS := ix.PTS[:0], ix.keyPTS[:0]
	for {
		var p C.int64_t
		var key C.int
		r := C.gdv_next_packet(f.c, &p, &key)
		if r == 0 {
			break
		}
		if r < 0 {
			return fmt.Errorf("reading packet %d: %s", len(pts), ffErr(r))
		}
		if int64(p) == math.MinInt64 {
			return fmt.Errorf("packet %d has no timestamp", len(pts))
		}
		pts = append(pts, int64(p))
		if key != 0 {
			keyPTS = append(keyPTS, int64(p))
		}
	}
	ix.PTS, ix.keyPTS, ix.Keys = pts, keyPTS, ix.Keys[:0]
	if len(pts) == 0 {
		return errors.New("the video stream has no frames")
	}
	if len(keyPTS) == 0 {
		return errors.New("the video stream has no key frame")
	}
	slices.Sort(pts)
	for i := 1; i < len(pts); i++ {
		if pts[i] == pts[i-1] {
			return fmt.Errorf("two frames have the same timestamp %d", pts[i])
		}
	}
	slices.Sort(keyPTS)
	for _, k := range keyPTS {
		ix.Keys = append(ix.Keys, int32(ix.frameOf(k)))
	}
	return f.seekKey(ix, 0)
}

// frameOf is the index of the frame with presentation time p, or -1.
func (ix *Index) frameOf(p int64) int {
	i := sort.Search(len(ix.PTS), func(i int) bool { return ix.PTS[i] >= p })
	if i < len(ix.PTS) && ix.PTS[i] == p {
		return i
	}
	return -1
}

// keyBefore is the position in Keys of the last key frame at or before frame i (-1: none).
func (ix *Index) keyBefore(i int) int {
	return sort.Search(len(ix.Keys), func(k int) bool { return int(ix.Keys[k]) > i }) - 1
}

// VariableRate reports whether the intervals between frames differ by more than one
// timestamp unit (rounding).
func (ix *Index) VariableRate() bool {
	if len(ix.PTS) < 3 {
		return false
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := 1; i < len(ix.PTS); i++ {
		d := ix.PTS[i] - ix.PTS[i-1]
		lo, hi = min(lo, d), max(hi, d)
	}
	return hi-lo > 1
}

// Seconds is frame i's time from the first frame, in seconds.
func (ix *Index) Seconds(i int, tb [2]int) float64 {
	if tb[1] == 0 {
		return 0
	}
	return float64(ix.PTS[i]-ix.PTS[0]) * float64(tb[0]) / float64(tb[1])
}

// FrameAt is the first frame whose time is at or after t seconds (Len() when none).
func (ix *Index) FrameAt(t float64, tb [2]int) int {
	return sort.Search(len(ix.PTS), func(i int) bool { return ix.Seconds(i, tb) >= t-1e-9 })
}

func (f *File) seekKey(ix *Index, k int) error {
	if r := C.gdv_seek(f.c, C.int64_t(ix.PTS[ix.Keys[k]])); r < 0 {
		return fmt.Errorf("seeking to frame %d: %s", ix.Keys[k], ffErr(r))
	}
	f.live, f.lastIdx = false, -1
	return nil
}

// ErrFrame marks frames the decoder did not deliver: a truncated or corrupt file.
var ErrFrame = errors.New("frame not decoded")

// ReadFrames decodes frames first, first+stride, ... (count of them) as packed RGB into
// dst, one frame every FrameBytes(). It goes on from the previous call's position when
// no key frame lies in between, and otherwise seeks to the key frame before first
// (an earlier one when the demuxer lands after it).
func (f *File) ReadFrames(ix *Index, first, count, stride int, dst []byte) error {
	fb := f.FrameBytes()
	if count <= 0 {
		return nil
	}
	if last := first + (count-1)*stride; first < 0 || last >= ix.Len() || stride < 1 {
		return fmt.Errorf("frames %d..%d (stride %d) are outside the file's %d frames", first, last, stride, ix.Len())
	}
	if len(dst) < count*fb {
		return fmt.Errorf("destination of %d bytes is too small for %d frames of %d", len(dst), count, fb)
	}
	k := ix.keyBefore(first)
	if k < 0 {
		k = 0
	}
	cont := f.live && f.lastIdx < first && f.lastIdx >= int(ix.Keys[k])
	for {
		if !cont {
			if err := f.seekKey(ix, k); err != nil {
				return err
			}
		}
		again, err := f.decodeRun(ix, first, count, stride, dst, fb, !cont)
		if err != nil {
			f.live = false
			return err
		}
		if !again {
			f.live = true
			return nil
		}
		if k == 0 {
			f.live = false
			return fmt.Errorf("frame %d: %w: seeking to the first key frame landed after it", first, ErrFrame)
		}
		k, cont = k-1, false
	}
}

// decodeRun decodes until the frames are in dst. again: the first frame decoded after a
// seek came after first (the seek landed too late), so the caller seeks earlier.
func (f *File) decodeRun(ix *Index, first, count, stride int, dst []byte, fb int, afterSeek bool) (again bool, err error) {
	got := 0
	for got < count {
		want := first + got*stride
		// The frames before want are delivered already or not at all: the decoder skips
		// those of them no frame refers to.
		var p C.int64_t
		r := C.gdv_decode(f.c, C.int64_t(ix.PTS[want]), &p)
		if r == 0 {
			return false, fmt.Errorf("frame %d: %w: the stream ends first (truncated file?)", want, ErrFrame)
		}
		if r < 0 {
			if r == C.GDV_ETOOBIG {
				return false, fmt.Errorf("decoding frame %d: %w", want, f.Info.CheckPixels(f.MaxPixels))
			}
			if f.MaxPixels > 0 && (r == averrorInvalidData || r == -C.int(syscall.EINVAL)) {
				// What FFmpeg answers to a frame over max_pixels (and to corrupt data).
				return false, fmt.Errorf("decoding frame %d: %s (corrupt data, or a frame of more than max_image_pixels=%d pixels, whatever the header's %dx%d says)", want, ffErr(r), f.MaxPixels, f.Info.Width, f.Info.Height)
			}
			return false, fmt.Errorf("decoding frame %d: %s", want, ffErr(r))
		}
		f.decoded++
		i := ix.frameOf(int64(p))
		if i < 0 {
			return false, fmt.Errorf("decoding frame %d: the decoder returned a frame at time %d, which no packet has", want, int64(p))
		}
		if afterSeek {
			afterSeek = false
			if i > first {
				return true, nil
			}
		}
		f.lastIdx = i
		if i < want {
			continue
		}
		if i > want {
			return false, fmt.Errorf("frame %d: %w: the decoder went on to frame %d (corrupt data?)", want, ErrFrame, i)
		}
		out := dst[got*fb : (got+1)*fb]
		if r := C.gdv_convert(f.c, (*C.uint8_t)(unsafe.Pointer(&out[0])), C.int(f.Info.Width), C.int(f.Info.Height), C.int(f.Info.Width*3)); r != 0 {
			if r == -1 {
				return false, fmt.Errorf("frame %d: its size differs from the stream's %dx%d (size changes within a stream are not supported)", want, f.Info.Width, f.Info.Height)
			}
			return false, fmt.Errorf("converting frame %d to RGB: %s", want, ffErr(r))
		}
		got++
	}
	return false, nil
}

// DecodeSpan decodes from the key frame at or before frame first through frame last,
// converting nothing: what decoding a clip of those frames costs at least (its floor),
// which benchmarks compare ReadFrames' work with. It seeks every time. n is the number
// of frames the decoder delivered.
func (f *File) DecodeSpan(ix *Index, first, last int) (n int, err error) {
	if first < 0 || last < first || last >= ix.Len() {
		return 0, fmt.Errorf("frames %d..%d are outside the file's %d frames", first, last, ix.Len())
	}
	if err := f.seekKey(ix, max(ix.keyBefore(first), 0)); err != nil {
		return 0, err
	}
	for {
		var p C.int64_t
		r := C.gdv_decode(f.c, math.MinInt64, &p)
		if r == 0 {
			return n, fmt.Errorf("frame %d: %w: the stream ends first (truncated file?)", last, ErrFrame)
		}
		if r < 0 {
			return n, fmt.Errorf("decoding up to frame %d: %s", last, ffErr(r))
		}
		n++
		if i := ix.frameOf(int64(p)); i >= last {
			return n, nil
		} else if n == 1 && i > first {
			return n, fmt.Errorf("frame %d: %w: seeking landed after it, at frame %d", first, ErrFrame, i)
		}
	}
}

// AnnexB makes NextPacket give H.264 and HEVC packets in Annex B form (start codes, and
// the parameter sets before each key frame), as NVDEC's parser reads them; other codecs'
// packets are unchanged.
func (f *File) AnnexB() error {
	if r := C.gdv_annexb(f.c); r < 0 {
		return fmt.Errorf("the Annex B bitstream filter for %s: %s", f.Info.Codec, ffErr(r))
	}
	return nil
}

// Packet is one compressed packet of the video stream. Data points into C memory that
// stays valid until the next NextPacket, SeekKey or Close of its File.
type Packet struct {
	Data unsafe.Pointer
	Size int
	PTS  int64 // math.MinInt64 when unknown
	Key  bool
}

// NextPacket reads the next packet (filtered by AnnexB when enabled), without decoding
// it. ok is false at the end of the stream.
func (f *File) NextPacket(p *Packet) (ok bool, err error) {
	var data *C.uint8_t
	var size C.int
	var pts C.int64_t
	var key C.int
	r := C.gdv_read_packet(f.c, &data, &size, &pts, &key)
	if r < 0 {
		return false, fmt.Errorf("reading a packet: %s", ffErr(r))
	}
	if r == 0 {
		return false, nil
	}
	*p = Packet{Data: unsafe.Pointer(data), Size: int(size), PTS: int64(pts), Key: key != 0}
	return true, nil
}

// SeekKey moves the demuxer to the key frame at or before frame i (for NextPacket: a
// decoder fed from there is reset first) and returns that key frame's number.
func (f *File) SeekKey(ix *Index, i int) (int, error) {
	k := max(ix.keyBefore(i), 0)
	if err := f.seekKey(ix, k); err != nil {
		return 0, err
	}
	return int(ix.Keys[k]), nil
}

// EarlierKey is the key frame before key frame k (-1: none): where to seek when a seek
// to k landed after it.
func (ix *Index) EarlierKey(k int) int {
	p := ix.keyBefore(k) - 1
	if p < 0 || int(ix.Keys[p]) >= k {
		if p = ix.keyBefore(k - 1); p < 0 {
			return -1
		}
	}
	return int(ix.Keys[p])
}

// FrameOf is the number of the frame with presentation time pts, or -1.
func (ix *Index) FrameOf(pts int64) int { return ix.frameOf(pts) }

// keepString returns old when the C string in buf spells it (no allocation when a reused
// File opens another file of the same codec), else a new string.
func keepString(old string, buf []C.char) string {
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	if n == len(old) {
		same := true
		for i := 0; i < n; i++ {
			if byte(buf[i]) != old[i] {
				same = false
				break
			}
		}
		if same {
			return old
		}
	}
	return C.GoStringN(&buf[0], C.int(n))
}
