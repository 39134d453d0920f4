//go:build cuda

package nvdec

/*
#cgo LDFLAGS: -ldl -lcuda
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nvcuvid_api.h"

// The library's functions, resolved once by nv_load.
#define NV_PTR(name, args) static CUresult (*p_##name) args;
GDNV_FUNCS(NV_PTR)

static void *nv_lib;

static int nv_load(const char *path, char *err, int len) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, len, "%s", dlerror());
		return -1;
	}
#define NV_SYM(name, args)                                                   \
	p_##name = (CUresult(*) args)dlsym(h, #name);                            \
	if (!p_##name) {                                                         \
		snprintf(err, len, "%s has no function %s", path, #name);            \
		dlclose(h);                                                          \
		return -1;                                                           \
	}
	GDNV_FUNCS(NV_SYM)
	nv_lib = h;
	return 0;
}

enum { NV_MAX_DISPLAY = 64, NV_MAX_SURFACES = 32, NV_ERR_FORMAT = -2 };

// nv_session is one parser and its decoder. The callbacks record their first failure
// in err/msg, which nv_parse returns.
typedef struct {
	CUcontext ctx;
	int codec;
	CUvideoparser parser;
	CUvideodecoder dec;
	int width, height;       // display size
	int surface_h;           // height of the mapped surface's luma plane
	unsigned long dec_w, dec_h;
	int matrix, full_range;  // the bitstream's colour description (VUI)
	int err;
	char msg[160];
	int ndisp;
	gdnv_disp_info disp[NV_MAX_DISPLAY];
} nv_session;

static int nv_fail(nv_session *s, int code, const char *msg) {
	if (!s->err) {
		s->err = code ? code : -1;
		snprintf(s->msg, sizeof s->msg, "%s", msg);
	}
	return 0;
}

static int nv_on_sequence(void *user, gdnv_video_format *f) {
	nv_session *s = user;
	if (f->chroma_format != GDNV_CHROMA_420 || f->bit_depth_luma_minus8 != 0 || f->bit_depth_chroma_minus8 != 0) {
		char m[160];
		snprintf(m, sizeof m, "NVDEC output is 8-bit 4:2:0 only; this stream has chroma format %d at %d bits",
		         f->chroma_format, 8 + f->bit_depth_luma_minus8);
		return nv_fail(s, NV_ERR_FORMAT, m);
	}
	int w = f->display_area.right - f->display_area.left, h = f->display_area.bottom - f->display_area.top;
	s->matrix = f->video_signal_description.matrix_coefficients;
	s->full_range = (f->video_signal_description.format_bits >> 3) & 1;
	unsigned surfaces = f->min_num_decode_surfaces + 4;
	if (surfaces > NV_MAX_SURFACES) surfaces = NV_MAX_SURFACES;
	if (s->dec && s->dec_w == f->coded_width && s->dec_h == f->coded_height && s->width == w && s->height == h)
		return surfaces;
	if (s->dec) {
		p_cuvidDestroyDecoder(s->dec);
		s->dec = NULL;
	}
	gdnv_create_info ci;
	memset(&ci, 0, sizeof ci);
	ci.ulWidth = f->coded_width;
	ci.ulHeight = f->coded_height;
	ci.ulMaxWidth = f->coded_width;
	ci.ulMaxHeight = f->coded_height;
	ci.ulNumDecodeSurfaces = surfaces;
	ci.CodecType = f->codec;
	ci.ChromaFormat = f->chroma_format;
	ci.ulCreationFlags = 4; // cudaVideoCreate_PreferCUVID: the dedicated engines
	ci.display_area.left = f->display_area.left;
	ci.display_area.top = f->display_area.top;
	ci.display_area.right = f->display_area.right;
	ci.display_area.bottom = f->display_area.bottom;
	ci.OutputFormat = GDNV_SURFACE_NV12;
	ci.DeinterlaceMode = GDNV_DEINTERLACE_WEAVE;
	ci.ulTargetWidth = (w + 1) & ~1;
	ci.ulTargetHeight = (h + 1) & ~1;
	ci.ulNumOutputSurfaces = 2;
	int r = p_cuvidCreateDecoder(&s->dec, &ci);
	if (r != CUDA_SUCCESS) {
		s->dec = NULL;
		return nv_fail(s, r, "cuvidCreateDecoder");
	}
	s->dec_w = f->coded_width;
	s->dec_h = f->coded_height;
	s->width = w;
	s->height = h;
	s->surface_h = (int)ci.ulTargetHeight;
	return surfaces;
}

static int nv_on_decode(void *user, gdnv_pic_params *p) {
	nv_session *s = user;
	if (!s->dec) return nv_fail(s, 0, "a picture came before any sequence header");
	int r = p_cuvidDecodePicture(s->dec, p);
	return r == CUDA_SUCCESS ? 1 : nv_fail(s, r, "cuvidDecodePicture");
}

static int nv_on_display(void *user, gdnv_disp_info *d) {
	nv_session *s = user;
	if (!d) return 1;
	if (s->ndisp == NV_MAX_DISPLAY) return nv_fail(s, 0, "too many pictures queued for display");
	s->disp[s->ndisp++] = *d;
	return 1;
}

static int nv_open(nv_session *s, uintptr_t ctx, int codec) {
	memset(s, 0, sizeof *s);
	s->ctx = (CUcontext)ctx;
	s->codec = codec;
	gdnv_parser_params pp;
	memset(&pp, 0, sizeof pp);
	pp.CodecType = codec;
	pp.ulMaxNumDecodeSurfaces = 1; // the sequence callback returns the real number
	pp.ulClockRate = 0;
	pp.ulMaxDisplayDelay = 0;
	pp.pUserData = s;
	pp.pfnSequenceCallback = nv_on_sequence;
	pp.pfnDecodePicture = nv_on_decode;
	pp.pfnDisplayPicture = nv_on_display;
	CUresult r = cuCtxPushCurrent(s->ctx);
	if (r != CUDA_SUCCESS) return r;
	r = p_cuvidCreateVideoParser(&s->parser, &pp);
	CUcontext old;
	cuCtxPopCurrent(&old);
	return r;
}

// nv_parse feeds one packet (payload NULL with GDNV_PKT_ENDOFSTREAM: the end, which
// flushes the pictures still held).
static int nv_parse(nv_session *s, const void *data, size_t n, long long pts, unsigned long flags) {
	gdnv_packet pk;
	memset(&pk, 0, sizeof pk);
	pk.flags = flags;
	pk.payload_size = n;
	pk.payload = data;
	pk.timestamp = pts;
	CUresult r = cuCtxPushCurrent(s->ctx);
	if (r != CUDA_SUCCESS) return r;
	r = p_cuvidParseVideoData(s->parser, &pk);
	CUcontext old;
	cuCtxPopCurrent(&old);
	if (s->err) return s->err;
	return r;
}

static int nv_map(nv_session *s, int pic, uintptr_t stream, unsigned long long *dev, unsigned *pitch) {
	gdnv_proc_params pp;
	memset(&pp, 0, sizeof pp);
	pp.progressive_frame = 1;
	pp.output_stream = (CUstream)stream;
	CUresult r = cuCtxPushCurrent(s->ctx);
	if (r != CUDA_SUCCESS) return r;
	r = p_cuvidMapVideoFrame64(s->dec, pic, dev, pitch, &pp);
	CUcontext old;
	cuCtxPopCurrent(&old);
	return r;
}

static int nv_unmap(nv_session *s, unsigned long long dev) {
	CUresult r = cuCtxPushCurrent(s->ctx);
	if (r != CUDA_SUCCESS) return r;
	r = p_cuvidUnmapVideoFrame64(s->dec, dev);
	CUcontext old;
	cuCtxPopCurrent(&old);
	return r;
}

static void nv_close(nv_session *s) {
	if (cuCtxPushCurrent(s->ctx) != CUDA_SUCCESS) return;
	if (s->parser) p_cuvidDestroyVideoParser(s->parser);
	if (s->dec) p_cuvidDestroyDecoder(s->dec);
	s->parser = NULL;
	s->dec = NULL;
	CUcontext old;
	cuCtxPopCurrent(&old);
}

static const char *nv_msg(nv_session *s) { return s->msg; }
static gdnv_disp_info *nv_disp(nv_session *s, int i) { return &s->disp[i]; }
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/internal/cuda"
	"github.com/godali/godali/kernels"
)

// LibraryEnv names the environment variable that points at another libnvcuvid (the GPU
// emulator's in tests).
const LibraryEnv = "GODALI_NVCUVID_LIBRARY"

var (
	loadOnce sync.Once
	loadErr  error
)

// ErrNoNVDEC is wrapped by Load's error when libnvcuvid cannot be used.
var ErrNoNVDEC = errors.New("GPU video decoding needs NVIDIA's libnvcuvid.so.1 (part of the driver; in a container, NVIDIA_DRIVER_CAPABILITIES must include video)")

// Load opens libnvcuvid once; later calls return the first call's result.
func Load() error {
	loadOnce.Do(func() {
		path := os.Getenv(LibraryEnv)
		if path == "" {
			path = "libnvcuvid.so.1"
		}
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var buf [512]C.char
		if C.nv_load(cpath, &buf[0], C.int(len(buf))) != 0 {
			loadErr = fmt.Errorf("%w: %s (set %s to its path)", ErrNoNVDEC, C.GoString(&buf[0]), LibraryEnv)
		}
	})
	return loadErr
}

// Codec is NVDEC's number for a codec FFmpeg names (video.Info.Codec), or -1 for those
// godali does not send to NVDEC: H.264 and HEVC (as Annex B), VP9 and AV1 (frames as
// demuxed) go; MPEG-4 Part 2, MPEG-2 and VP8 would need more bitstream work and stay on
// the CPU.
func Codec(name string) int {
	switch name {
	case "h264":
		return C.GDNV_CODEC_H264
	case "hevc":
		return C.GDNV_CODEC_HEVC
	case "vp9":
		return C.GDNV_CODEC_VP9
	case "av1":
		return C.GDNV_CODEC_AV1
	}
	return -1
}

// Takes reports whether NVDEC decodes a stream of this codec and pixel format (8-bit
// 4:2:0, given as NV12; a container that does not say, "unknown" or "none", is tried,
// and NVDEC's parser has the last word: ReadFrames's ErrFormat).
func Takes(info video.Info) bool {
	switch info.PixFmt {
	case "yuv420p", "yuvj420p", "unknown", "none":
		return Codec(info.Codec) >= 0
	}
	return false
}

// For returns a decoder for codec on dev: d itself when it decodes that codec, else a new
// one (d, if any, is closed). A worker keeps one decoder across the files it reads.
func For(d *Decoder, dev *cuda.Device, mod *kernels.Module, codec string) (*Decoder, error) {
	if d != nil && d.codec == codec {
		return d, nil
	}
	if d != nil {
		d.Close()
	}
	return NewDecoder(dev, mod, codec)
}

// Decoder is one NVDEC parser and decoder for one stream's codec, bound to a device.
// One goroutine at a time.
type Decoder struct {
	s      *C.nv_session // C memory: the parser's callbacks keep its address
	dev    *cuda.Device
	mod    *kernels.Module
	args   *cuda.KernelArgs
	codec  string
	fed    bool // packets went in since the last flush
	matrix kernels.YUVMatrix
	want   map[int64]int // a read's wanted timestamps -> output slot
}

// NewDecoder makes a decoder for codec (video.Info.Codec) on dev; mod converts its
// frames to RGB.
func NewDecoder(dev *cuda.Device, mod *kernels.Module, codec string) (*Decoder, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	c := Codec(codec)
	if c < 0 {
		return nil, fmt.Errorf("NVDEC does not decode %s", codec)
	}
	d := &Decoder{s: (*C.nv_session)(C.calloc(1, C.size_t(unsafe.Sizeof(C.nv_session{})))), dev: dev, mod: mod,
		args: cuda.NewKernelArgs(), codec: codec, want: map[int64]int{}}
	if d.s == nil {
		d.args.Free()
		return nil, errors.New("out of memory for an NVDEC session")
	}
	if r := C.nv_open(d.s, C.uintptr_t(dev.Context()), C.int(c)); r != 0 {
		C.free(unsafe.Pointer(d.s))
		d.args.Free()
		return nil, fmt.Errorf("cuvidCreateVideoParser for %s: CUDA error %d", codec, int(r))
	}
	return d, nil
}

// Codec is the codec the decoder was made for.
func (d *Decoder) Codec() string { return d.codec }

// Close destroys the parser and the decoder.
func (d *Decoder) Close() {
	if d.s != nil {
		C.nv_close(d.s)
		C.free(unsafe.Pointer(d.s))
		d.s = nil
		d.args.Free()
	}
}

// ErrFormat is wrapped by ReadFrames's error when the stream's pictures are not 8-bit
// 4:2:0 (NVDEC gives no NV12 for them); nothing was written.
var ErrFormat = errors.New("a picture format NVDEC does not output as NV12")

func (d *Decoder) fail(what string, r C.int) error {
	if d.s.err == C.NV_ERR_FORMAT {
		return fmt.Errorf("%s: %w: %s", what, ErrFormat, C.GoString(C.nv_msg(d.s)))
	}
	if msg := C.GoString(C.nv_msg(d.s)); msg != "" {
		if d.s.err > 0 {
			return fmt.Errorf("%s: %s: CUDA error %d", what, msg, int(d.s.err))
		}
		return fmt.Errorf("%s: %s", what, msg)
	}
	return fmt.Errorf("%s: CUDA error %d", what, int(r))
}

// flush ends the stream for the parser (its held pictures are displayed and dropped)
// and clears a failure, so that the next read starts clean.
func (d *Decoder) flush() error {
	if d.fed {
		d.fed = false
		r := C.nv_parse(d.s, nil, 0, 0, C.GDNV_PKT_ENDOFSTREAM)
		if r != 0 {
			err := d.fail("flushing the NVDEC parser", r)
			d.s.err, d.s.msg[0] = 0, 0
			d.s.ndisp = 0
			return err
		}
	}
	d.s.ndisp = 0
	return nil
}

// ReadFrames decodes frames first, first+stride, ... (count of them) of f (opened, with
// ix its index) as packed RGB into device memory: frame k at dst + k*W*H*3, written on
// stream, which ReadFrames waits for before it returns.
func (d *Decoder) ReadFrames(f *video.File, ix *video.Index, first, count, stride int, dst uintptr, stream cuda.Stream) error {
	if count <= 0 {
		return nil
	}
	if last := first + (count-1)*stride; first < 0 || stride < 1 || last >= ix.Len() {
		return fmt.Errorf("frames %d..%d (stride %d) are outside the file's %d frames", first, last, stride, ix.Len())
	}
	if f.Info.Codec != d.codec {
		return fmt.Errorf("the NVDEC decoder is for %s, the file is %s", d.codec, f.Info.Codec)
	}
	if err := f.AnnexB(); err != nil {
		return err
	}
	d.s.err, d.s.msg[0], d.s.ndisp = 0, 0, 0 // a failed read's state is not carried over
	clear(d.want)
	for k := 0; k < count; k++ {
		d.want[ix.PTS[first+k*stride]] = k
	}
	at := first
	for {
		if err := d.flush(); err != nil {
			return err
		}
		key, err := f.SeekKey(ix, at)
		if err != nil {
			return err
		}
		late, err := d.run(f, ix, first, dst, stream)
		if err != nil || !late {
			_ = d.flush()
			return err
		}
		// The demuxer landed after the key frame: start from an earlier one.
		if at = ix.EarlierKey(key); at < 0 {
			_ = d.flush()
			return fmt.Errorf("frame %d: %w: seeking to the first key frame landed after it", first, video.ErrFrame)
		}
	}
}

// run feeds packets until every wanted frame is converted. late: the first frame
// displayed came after first (the seek landed too late).
func (d *Decoder) run(f *video.File, ix *video.Index, first int, dst uintptr, stream cuda.Stream) (late bool, err error) {
	fb := f.FrameBytes()
	left := len(d.want)
	seen := false
	var p video.Packet
	for left > 0 {
		ok, err := f.NextPacket(&p)
		if err != nil {
			return false, err
		}
		var r C.int
		if ok {
			pts := p.PTS
			flags := C.ulong(C.GDNV_PKT_ENDOFPICTURE)
			if pts != math.MinInt64 {
				flags |= C.GDNV_PKT_TIMESTAMP
			}
			d.fed = true
			r = C.nv_parse(d.s, p.Data, C.size_t(p.Size), C.longlong(pts), flags)
		} else {
			r = C.nv_parse(d.s, nil, 0, 0, C.GDNV_PKT_ENDOFSTREAM)
			d.fed = false
		}
		if r != 0 {
			return false, d.fail("NVDEC decoding "+f.Info.Codec, r)
		}
		for i := 0; i < int(d.s.ndisp); i++ {
			di := C.nv_disp(d.s, C.int(i))
			pts := int64(di.timestamp)
			if !seen {
				seen = true
				if fi := ix.FrameOf(pts); fi > first {
					d.s.ndisp = 0
					return true, nil
				}
			}
			k, wanted := d.want[pts]
			if !wanted {
				continue
			}
			if err := d.convert(int(di.picture_index), f, dst+uintptr(k*fb), stream); err != nil {
				d.s.ndisp = 0
				return false, err
			}
			delete(d.want, pts)
			left--
		}
		d.s.ndisp = 0
		if !ok && left > 0 {
			return false, fmt.Errorf("%w: %d of the frames were not decoded before the stream ended (truncated file?)", video.ErrFrame, left)
		}
	}
	return false, nil
}

// convert maps picture pic, converts it into dst on stream, waits for stream and unmaps.
func (d *Decoder) convert(pic int, f *video.File, dst uintptr, stream cuda.Stream) error {
	w, h := int(d.s.width), int(d.s.height)
	if w != f.Info.Width || h != f.Info.Height {
		return fmt.Errorf("NVDEC decodes %dx%d frames, the container says %dx%d", w, h, f.Info.Width, f.Info.Height)
	}
	var dev C.ulonglong
	var pitch C.uint
	if r := C.nv_map(d.s, C.int(pic), C.uintptr_t(stream), &dev, &pitch); r != 0 {
		return fmt.Errorf("cuvidMapVideoFrame64: CUDA error %d", int(r))
	}
	// The bitstream's colour description, as FFmpeg's decoder gives the CPU path; the
	// container's when the bitstream leaves the matrix unspecified (0 and 2).
	cs, full := int(d.s.matrix), d.s.full_range != 0 || f.Info.FullRange
	if cs == 0 || cs == 2 {
		cs = f.Info.ColorSpace
	}
	d.matrix = kernels.YUVToRGB(cs, full)
	fr := kernels.NV12Frame{Luma: uintptr(dev), Chroma: uintptr(dev) + uintptr(pitch)*uintptr(d.s.surface_h),
		Pitch: int(pitch), W: w, H: h, Dst: dst, DstPitch: w * 3, Matrix: d.matrix}
	err := d.mod.NV12ToRGB(&fr, stream, d.args)
	if err == nil {
		// The surface may be reused once unmapped: the conversion must be over.
		err = d.dev.Synchronize(stream)
	}
	if r := C.nv_unmap(d.s, dev); r != 0 && err == nil {
		err = fmt.Errorf("cuvidUnmapVideoFrame64: CUDA error %d", int(r))
	}
	return err
}
