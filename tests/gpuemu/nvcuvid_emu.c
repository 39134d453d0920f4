/* NVDEC emulation over FFmpeg's decoders, part of the GPU emulator (README.md, "NVDEC").
 *
 * Implements the cuvid* functions nvdec/nvdec_cuda.go resolves, with the layouts of
 * nvdec/nvcuvid_api.h, so that godali's CUDA flavour runs its NVDEC path on a machine
 * without a GPU. What it keeps of NVDEC's contracts, so that godali's host code is
 * exercised as a GPU would:
 *
 *  - The parser (cuvidCreateVideoParser, cuvidParseVideoData) takes Annex B H.264/HEVC
 *    packets (VP9 and AV1 frames as demuxed) with their timestamps and calls back in
 *    NVDEC's order: the sequence callback before the first picture and on a format
 *    change (its return value, when above 1, sets the number of surfaces the parser
 *    cycles through), the decode callback with each picture (its CurrPicIdx one of the
 *    surfaces), the display callback in display order with the packet's timestamp.
 *    CUVID_PKT_ENDOFSTREAM flushes the held pictures; the parser goes on afterwards;
 *    CUVID_PKT_DISCONTINUITY drops them. A callback returning 0 fails the call.
 *  - Pictures are decoded by FFmpeg (libavcodec) on the calling thread when the parser
 *    meets them; cuvidDecodePicture must be given the parameters the decode callback
 *    received, on a decoder whose size and surface count hold the picture.
 *  - cuvidMapVideoFrame64 hands out one of ulNumOutputSurfaces mapped surfaces (device
 *    memory of the emulated driver, pitch aligned to 256, luma rows then interleaved
 *    CbCr rows, NV12) and fills it in order on the output stream, as the post-processing
 *    does on a GPU. cuvidUnmapVideoFrame64 overwrites the surface at once (0xA5): work
 *    still queued that reads a surface after it was unmapped reads garbage, as it may on
 *    a GPU, and mapping more surfaces than ulNumOutputSurfaces fails.
 *  - Only 8-bit 4:2:0 pictures give NV12 surfaces; the sequence callback reports the
 *    stream's real chroma format and bit depth, and decoders for anything else are
 *    refused (CUDA_ERROR_NOT_SUPPORTED).
 *
 * Misuses (unknown handles, a picture index out of range, unmapping what is not mapped)
 * return CUDA_ERROR_INVALID_VALUE or CUDA_ERROR_INVALID_HANDLE with a "gpuemu nvcuvid:"
 * line on stderr; GODALI_EMU_STRICT=1 aborts on them. It says nothing about NVDEC's
 * speed, its own decoding accuracy or its limits (sizes, codecs per GPU). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>

#include "../../nvdec/nvcuvid_api.h"
#include "emu.h"

#define PARSER_MAGIC 0x70617273u
#define DECODER_MAGIC 0x64656364u
#define PIC_MAGIC 0x7069636bu
#define MAX_SURFACES 32
#define MAX_OUTPUTS 8

static int env_is(const char *name, const char *val) {
	const char *e = getenv(name);
	return e && strcmp(e, val) == 0;
}

static CUresult misuse(CUresult code, const char *fmt, ...) {
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpuemu nvcuvid: %s\n", buf);
	if (env_is("GODALI_EMU_STRICT", "1")) abort();
	return code;
}

/* A picture as the decode callback sees it: NVDEC's parameters, then what the emulated
 * decoder needs (the frame FFmpeg decoded). */
typedef struct {
	gdnv_pic_params p;
	unsigned magic;
	AVFrame *frame;
} emu_pic;

typedef struct {
	unsigned magic;
	gdnv_parser_params params;
	AVCodecContext *ctx;
	AVPacket *pkt;
	AVFrame *frame;
	int have_format;
	gdnv_video_format fmt;
	unsigned surfaces;
	unsigned next_surface;
} emu_parser;

typedef struct {
	unsigned magic;
	gdnv_create_info info;
	AVFrame *surface[MAX_SURFACES];
	struct {
		CUdeviceptr ptr;
		size_t size;
		int mapped;
		unsigned gen; /* unmaps so far (atomic: the stream's thread reads it) */
	} out[MAX_OUTPUTS];
	unsigned pitch;
} emu_decoder;

static enum AVCodecID codec_id(int c) {
	switch (c) {
	case GDNV_CODEC_H264: return AV_CODEC_ID_H264;
	case GDNV_CODEC_HEVC: return AV_CODEC_ID_HEVC;
	case GDNV_CODEC_VP9: return AV_CODEC_ID_VP9;
	case GDNV_CODEC_AV1: return AV_CODEC_ID_AV1;
	}
	return AV_CODEC_ID_NONE;
}

GDEMU_EXPORT CUresult cuvidCreateVideoParser(CUvideoparser *out, gdnv_parser_params *pp) {
	if (!out || !pp) return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidCreateVideoParser: NULL argument");
	enum AVCodecID id = codec_id(pp->CodecType);
	const AVCodec *codec = id == AV_CODEC_ID_NONE ? NULL : avcodec_find_decoder(id);
	if (!codec) return CUDA_ERROR_NOT_SUPPORTED;
	if (!pp->pfnSequenceCallback || !pp->pfnDecodePicture || !pp->pfnDisplayPicture)
		return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidCreateVideoParser: a callback is missing");
	emu_parser *p = calloc(1, sizeof *p);
	if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
	p->params = *pp;
	p->ctx = avcodec_alloc_context3(codec);
	p->pkt = av_packet_alloc();
	p->frame = av_frame_alloc();
	if (!p->ctx || !p->pkt || !p->frame) goto oom;
	p->ctx->thread_count = 1;
	if (avcodec_open2(p->ctx, codec, NULL) < 0) goto oom;
	p->surfaces = pp->ulMaxNumDecodeSurfaces ? pp->ulMaxNumDecodeSurfaces : 1;
	p->magic = PARSER_MAGIC;
	*out = p;
	return CUDA_SUCCESS;
oom:
	avcodec_free_context(&p->ctx);
	av_packet_free(&p->pkt);
	av_frame_free(&p->frame);
	free(p);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

GDEMU_EXPORT CUresult cuvidDestroyVideoParser(CUvideoparser h) {
	emu_parser *p = h;
	if (!p || p->magic != PARSER_MAGIC) return misuse(CUDA_ERROR_INVALID_HANDLE, "cuvidDestroyVideoParser: not a parser");
	p->magic = 0;
	avcodec_free_context(&p->ctx);
	av_packet_free(&p->pkt);
	av_frame_free(&p->frame);
	free(p);
	return CUDA_SUCCESS;
}

/* The sequence as NVDEC's parser describes it, from a decoded frame. */
static void describe(emu_parser *p, const AVFrame *f, gdnv_video_format *v) {
	memset(v, 0, sizeof *v);
	const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
	v->codec = p->params.CodecType;
	v->progressive_sequence = 1;
	v->bit_depth_luma_minus8 = d ? d->comp[0].depth - 8 : 0;
	v->bit_depth_chroma_minus8 = v->bit_depth_luma_minus8;
	v->min_num_decode_surfaces = 8;
	v->coded_width = (f->width + 15) & ~15;
	v->coded_height = (f->height + 15) & ~15;
	v->display_area.right = f->width;
	v->display_area.bottom = f->height;
	v->chroma_format = !d || d->nb_components < 3 ? GDNV_CHROMA_MONO
	                   : d->log2_chroma_w == 1 && d->log2_chroma_h == 1 ? GDNV_CHROMA_420
	                   : d->log2_chroma_w == 1 ? GDNV_CHROMA_422 : GDNV_CHROMA_444;
	v->video_signal_description.format_bits = (5 & 7) | ((f->color_range == AVCOL_RANGE_JPEG) << 3);
	v->video_signal_description.matrix_coefficients = f->colorspace;
}

/* deliver hands one decoded frame to the callbacks: the sequence (when new), the
 * decode, the display. 0: a callback failed. */
static int deliver(emu_parser *p, AVFrame *f) {
	gdnv_video_format v;
	describe(p, f, &v);
	if (!p->have_format || v.coded_width != p->fmt.coded_width || v.coded_height != p->fmt.coded_height ||
	    v.chroma_format != p->fmt.chroma_format || v.bit_depth_luma_minus8 != p->fmt.bit_depth_luma_minus8 ||
	    v.display_area.right != p->fmt.display_area.right || v.display_area.bottom != p->fmt.display_area.bottom) {
		int r = p->params.pfnSequenceCallback(p->params.pUserData, &v);
		if (r == 0) return 0;
		p->fmt = v;
		p->have_format = 1;
		p->surfaces = r > 1 ? (unsigned)r : v.min_num_decode_surfaces;
		if (p->surfaces > MAX_SURFACES) p->surfaces = MAX_SURFACES;
		p->next_surface = 0;
	}
	emu_pic pic;
	memset(&pic, 0, sizeof pic);
	pic.p.PicWidthInMbs = (int)v.coded_width / 16;
	pic.p.FrameHeightInMbs = (int)v.coded_height / 16;
	pic.p.CurrPicIdx = (int)(p->next_surface++ % p->surfaces);
	pic.p.intra_pic_flag = f->key_frame;
	pic.p.ref_pic_flag = 1;
	pic.magic = PIC_MAGIC;
	pic.frame = f;
	if (!p->params.pfnDecodePicture(p->params.pUserData, &pic.p)) return 0;
	gdnv_disp_info di;
	memset(&di, 0, sizeof di);
	di.picture_index = pic.p.CurrPicIdx;
	di.progressive_frame = 1;
	di.timestamp = f->pts != AV_NOPTS_VALUE ? f->pts : 0;
	return p->params.pfnDisplayPicture(p->params.pUserData, &di) != 0;
}

/* drain takes every frame the decoder has ready. */
static CUresult drain(emu_parser *p) {
	for (;;) {
		int r = avcodec_receive_frame(p->ctx, p->frame);
		if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return CUDA_SUCCESS;
		if (r < 0) return CUDA_ERROR_INVALID_SOURCE;
		int ok = deliver(p, p->frame);
		av_frame_unref(p->frame);
		if (!ok) return CUDA_ERROR_UNKNOWN;
	}
}

GDEMU_EXPORT CUresult cuvidParseVideoData(CUvideoparser h, gdnv_packet *pk) {
	emu_parser *p = h;
	if (!p || p->magic != PARSER_MAGIC) return misuse(CUDA_ERROR_INVALID_HANDLE, "cuvidParseVideoData: not a parser");
	if (!pk) return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidParseVideoData: NULL packet");
	if (pk->flags & GDNV_PKT_DISCONTINUITY) avcodec_flush_buffers(p->ctx);
	if (pk->payload_size > 0) {
		if (!pk->payload) return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidParseVideoData: %lu bytes at NULL", pk->payload_size);
		if (av_new_packet(p->pkt, (int)pk->payload_size) < 0) return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(p->pkt->data, pk->payload, pk->payload_size);
		p->pkt->pts = pk->flags & GDNV_PKT_TIMESTAMP ? pk->timestamp : AV_NOPTS_VALUE;
		int r = avcodec_send_packet(p->ctx, p->pkt);
		av_packet_unref(p->pkt);
		if (r < 0 && r != AVERROR(EAGAIN)) return CUDA_ERROR_INVALID_SOURCE;
		CUresult cr = drain(p);
		if (cr != CUDA_SUCCESS) return cr;
	}
	if (pk->flags & GDNV_PKT_ENDOFSTREAM) {
		avcodec_send_packet(p->ctx, NULL);
		CUresult cr = drain(p);
		avcodec_flush_buffers(p->ctx); /* the parser takes a new stream afterwards */
		if (cr != CUDA_SUCCESS) return cr;
	}
	return CUDA_SUCCESS;
}

GDEMU_EXPORT CUresult cuvidCreateDecoder(CUvideodecoder *out, gdnv_create_info *ci) {
	if (!out || !ci) return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidCreateDecoder: NULL argument");
	CUcontext cur = NULL;
	if (cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur) return misuse(CUDA_ERROR_INVALID_CONTEXT, "cuvidCreateDecoder: no current context");
	if (codec_id(ci->CodecType) == AV_CODEC_ID_NONE) return CUDA_ERROR_NOT_SUPPORTED;
	if (ci->ChromaFormat != GDNV_CHROMA_420 || ci->bitDepthMinus8 != 0 || ci->OutputFormat != GDNV_SURFACE_NV12)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (ci->ulNumDecodeSurfaces < 1 || ci->ulNumDecodeSurfaces > MAX_SURFACES)
		return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidCreateDecoder: %lu decode surfaces (1 to %d)", ci->ulNumDecodeSurfaces, MAX_SURFACES);
	if (ci->ulNumOutputSurfaces < 1 || ci->ulNumOutputSurfaces > MAX_OUTPUTS)
		return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidCreateDecoder: %lu output surfaces (1 to %d)", ci->ulNumOutputSurfaces, MAX_OUTPUTS);
	if (ci->ulTargetWidth == 0 || ci->ulTargetHeight == 0 || (ci->ulTargetWidth & 1) || (ci->ulTargetHeight & 1) ||
	    ci->ulWidth == 0 || ci->ulHeight == 0)
		return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidCreateDecoder: sizes %lux%lu, target %lux%lu (target sizes must be even)",
		              ci->ulWidth, ci->ulHeight, ci->ulTargetWidth, ci->ulTargetHeight);
	emu_decoder *d = calloc(1, sizeof *d);
	if (!d) return CUDA_ERROR_OUT_OF_MEMORY;
	d->info = *ci;
	d->pitch = (unsigned)((ci->ulTargetWidth + 255) & ~255ul);
	d->magic = DECODER_MAGIC;
	*out = d;
	return CUDA_SUCCESS;
}

GDEMU_EXPORT CUresult cuvidDestroyDecoder(CUvideodecoder h) {
	emu_decoder *d = h;
	if (!d || d->magic != DECODER_MAGIC) return misuse(CUDA_ERROR_INVALID_HANDLE, "cuvidDestroyDecoder: not a decoder");
	d->magic = 0;
	for (int i = 0; i < MAX_SURFACES; i++) av_frame_free(&d->surface[i]);
	for (int i = 0; i < MAX_OUTPUTS; i++)
		if (d->out[i].ptr) cuMemFree(d->out[i].ptr);
	free(d);
	return CUDA_SUCCESS;
}

GDEMU_EXPORT CUresult cuvidDecodePicture(CUvideodecoder h, gdnv_pic_params *pp) {
	emu_decoder *d = h;
	if (!d || d->magic != DECODER_MAGIC) return misuse(CUDA_ERROR_INVALID_HANDLE, "cuvidDecodePicture: not a decoder");
	emu_pic *pic = (emu_pic *)pp;
	if (!pp || pic->magic != PIC_MAGIC)
		return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidDecodePicture: not the parameters the decode callback received");
	if (pp->CurrPicIdx < 0 || (unsigned long)pp->CurrPicIdx >= d->info.ulNumDecodeSurfaces)
		return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidDecodePicture: picture index %d, the decoder has %lu surfaces",
		              pp->CurrPicIdx, d->info.ulNumDecodeSurfaces);
	AVFrame *f = pic->frame;
	if ((unsigned long)f->width > d->info.ulWidth || (unsigned long)f->height > d->info.ulHeight)
		return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidDecodePicture: a %dx%d picture on a %lux%lu decoder",
		              f->width, f->height, d->info.ulWidth, d->info.ulHeight);
	AVFrame **s = &d->surface[pp->CurrPicIdx];
	if (!*s && !(*s = av_frame_alloc())) return CUDA_ERROR_OUT_OF_MEMORY;
	av_frame_unref(*s);
	if (av_frame_ref(*s, f) < 0) return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

/* The post-processing of one mapped surface, queued on the output stream. */
typedef struct {
	AVFrame *frame;
	uint8_t *dst;
	unsigned pitch;
	int w, h, surface_h;
	unsigned *gen, mapped_gen;
} emu_copy;

static void CUDA_CB run_copy(void *arg) {
	emu_copy *c = arg;
	const AVFrame *f = c->frame;
	if (__atomic_load_n(c->gen, __ATOMIC_ACQUIRE) != c->mapped_gen) {
		/* Unmapped before the stream got here: the surface is no longer this picture. */
		av_frame_free(&c->frame);
		free(c);
		return;
	}
	for (int y = 0; y < c->h; y++) {
		uint8_t *row = c->dst + (size_t)y * c->pitch;
		memcpy(row, f->data[0] + (size_t)y * f->linesize[0], c->w);
	}
	uint8_t *uv = c->dst + (size_t)c->pitch * c->surface_h;
	for (int y = 0; y < (c->h + 1) / 2; y++) {
		uint8_t *row = uv + (size_t)y * c->pitch;
		const uint8_t *u = f->data[1] + (size_t)y * f->linesize[1], *v = f->data[2] + (size_t)y * f->linesize[2];
		for (int x = 0; x < (c->w + 1) / 2; x++) {
			row[2 * x] = u[x];
			row[2 * x + 1] = v[x];
		}
	}
	av_frame_free(&c->frame);
	free(c);
}

GDEMU_EXPORT CUresult cuvidMapVideoFrame64(CUvideodecoder h, int idx, unsigned long long *dev, unsigned int *pitch,
                                           gdnv_proc_params *pp) {
	emu_decoder *d = h;
	if (!d || d->magic != DECODER_MAGIC) return misuse(CUDA_ERROR_INVALID_HANDLE, "cuvidMapVideoFrame64: not a decoder");
	if (!dev || !pitch || !pp) return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidMapVideoFrame64: NULL argument");
	if (idx < 0 || (unsigned long)idx >= d->info.ulNumDecodeSurfaces || !d->surface[idx] || !d->surface[idx]->data[0])
		return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidMapVideoFrame64: picture %d was not decoded", idx);
	const AVFrame *f = d->surface[idx];
	if (f->format != AV_PIX_FMT_YUV420P && f->format != AV_PIX_FMT_YUVJ420P) return CUDA_ERROR_NOT_SUPPORTED;
	int slot = -1;
	for (unsigned long i = 0; i < d->info.ulNumOutputSurfaces; i++)
		if (!d->out[i].mapped) {
			slot = (int)i;
			break;
		}
	if (slot < 0)
		return misuse(CUDA_ERROR_MAP_FAILED, "cuvidMapVideoFrame64: all %lu output surfaces are mapped",
		              d->info.ulNumOutputSurfaces);
	int sh = (int)d->info.ulTargetHeight;
	size_t size = (size_t)d->pitch * (size_t)(sh + sh / 2);
	if (!d->out[slot].ptr) {
		CUresult r = cuMemAlloc(&d->out[slot].ptr, size);
		if (r != CUDA_SUCCESS) return r;
		d->out[slot].size = size;
	}
	emu_copy *c = calloc(1, sizeof *c);
	if (!c || !(c->frame = av_frame_clone(f))) {
		free(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->dst = (uint8_t *)(uintptr_t)d->out[slot].ptr;
	c->pitch = d->pitch;
	c->w = f->width < (int)d->info.ulTargetWidth ? f->width : (int)d->info.ulTargetWidth;
	c->h = f->height < sh ? f->height : sh;
	c->surface_h = sh;
	c->gen = &d->out[slot].gen;
	c->mapped_gen = __atomic_load_n(c->gen, __ATOMIC_ACQUIRE);
	CUresult r = cuLaunchHostFunc(pp->output_stream, run_copy, c);
	if (r != CUDA_SUCCESS) {
		av_frame_free(&c->frame);
		free(c);
		return r;
	}
	d->out[slot].mapped = 1;
	*dev = d->out[slot].ptr;
	*pitch = d->pitch;
	return CUDA_SUCCESS;
}

GDEMU_EXPORT CUresult cuvidUnmapVideoFrame64(CUvideodecoder h, unsigned long long dev) {
	emu_decoder *d = h;
	if (!d || d->magic != DECODER_MAGIC) return misuse(CUDA_ERROR_INVALID_HANDLE, "cuvidUnmapVideoFrame64: not a decoder");
	for (int i = 0; i < MAX_OUTPUTS; i++)
		if (d->out[i].mapped && d->out[i].ptr == dev) {
			d->out[i].mapped = 0;
			__atomic_add_fetch(&d->out[i].gen, 1, __ATOMIC_RELEASE);
			/* The surface goes back to the decoder: later readers see garbage. */
			memset((void *)(uintptr_t)dev, 0xA5, d->out[i].size);
			return CUDA_SUCCESS;
		}
	return misuse(CUDA_ERROR_INVALID_VALUE, "cuvidUnmapVideoFrame64: %#llx is not a mapped surface", dev);
}
