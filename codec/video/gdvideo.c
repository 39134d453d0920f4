// gdvideo: FFmpeg behind dlopen. The structures are those of the headers this file is
// compiled with; gdv_load refuses libraries of another major version, whose layouts
// differ.
#include "gdvideo.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

// X(library, function): every FFmpeg function the shim calls.
#define GDV_FUNCS(X)                                                                     \
	X(GDV_AVUTIL, avutil_version)                                                        \
	X(GDV_AVUTIL, av_frame_alloc)                                                        \
	X(GDV_AVUTIL, av_frame_free)                                                         \
	X(GDV_AVUTIL, av_strerror)                                                           \
	X(GDV_AVUTIL, av_malloc)                                                             \
	X(GDV_AVUTIL, av_freep)                                                              \
	X(GDV_AVUTIL, av_log_set_level)                                                      \
	X(GDV_AVUTIL, av_display_rotation_get)                                               \
	X(GDV_AVUTIL, av_get_pix_fmt_name)                                                   \
	X(GDV_AVUTIL, av_dict_set_int)                                                       \
	X(GDV_AVUTIL, av_dict_free)                                                          \
	X(GDV_AVCODEC, avcodec_version)                                                      \
	X(GDV_AVCODEC, avcodec_find_decoder)                                                 \
	X(GDV_AVCODEC, avcodec_alloc_context3)                                               \
	X(GDV_AVCODEC, avcodec_free_context)                                                 \
	X(GDV_AVCODEC, avcodec_parameters_to_context)                                        \
	X(GDV_AVCODEC, avcodec_open2)                                                        \
	X(GDV_AVCODEC, avcodec_send_packet)                                                  \
	X(GDV_AVCODEC, avcodec_receive_frame)                                                \
	X(GDV_AVCODEC, avcodec_flush_buffers)                                                \
	X(GDV_AVCODEC, avcodec_get_name)                                                     \
	X(GDV_AVCODEC, av_packet_alloc)                                                      \
	X(GDV_AVCODEC, av_packet_free)                                                       \
	X(GDV_AVCODEC, av_packet_unref)                                                      \
	X(GDV_AVCODEC, av_packet_move_ref)                                                   \
	X(GDV_AVCODEC, av_bsf_get_by_name)                                                   \
	X(GDV_AVCODEC, av_bsf_alloc)                                                         \
	X(GDV_AVCODEC, av_bsf_init)                                                          \
	X(GDV_AVCODEC, av_bsf_send_packet)                                                   \
	X(GDV_AVCODEC, av_bsf_receive_packet)                                                \
	X(GDV_AVCODEC, av_bsf_flush)                                                         \
	X(GDV_AVCODEC, av_bsf_free)                                                          \
	X(GDV_AVCODEC, avcodec_parameters_copy)                                              \
	X(GDV_AVFORMAT, avformat_version)                                                    \
	X(GDV_AVFORMAT, avformat_alloc_context)                                              \
	X(GDV_AVFORMAT, avformat_free_context)                                               \
	X(GDV_AVFORMAT, avformat_open_input)                                                 \
	X(GDV_AVFORMAT, avformat_find_stream_info)                                           \
	X(GDV_AVFORMAT, avformat_close_input)                                                \
	X(GDV_AVFORMAT, avformat_seek_file)                                                  \
	X(GDV_AVFORMAT, av_find_best_stream)                                                 \
	X(GDV_AVFORMAT, av_read_frame)                                                       \
	X(GDV_AVFORMAT, av_stream_get_side_data)                                             \
	X(GDV_AVFORMAT, avio_alloc_context)                                                  \
	X(GDV_AVFORMAT, avio_context_free)                                                   \
	X(GDV_SWSCALE, swscale_version)                                                      \
	X(GDV_SWSCALE, sws_getCachedContext)                                                 \
	X(GDV_SWSCALE, sws_scale)                                                            \
	X(GDV_SWSCALE, sws_freeContext)                                                      \
	X(GDV_SWSCALE, sws_setColorspaceDetails)                                             \
	X(GDV_SWSCALE, sws_getCoefficients)

// The function pointers have the headers' prototypes.
#define GDV_DECLARE(lib, fn) static __typeof__(&fn) p_##fn;
GDV_FUNCS(GDV_DECLARE)

#define GDV_STR2(x) #x
#define GDV_STR(x) GDV_STR2(x)

static const char *const gdv_sonames[GDV_NLIBS] = {
	"libavutil.so." GDV_STR(LIBAVUTIL_VERSION_MAJOR),
	"libavcodec.so." GDV_STR(LIBAVCODEC_VERSION_MAJOR),
	"libavformat.so." GDV_STR(LIBAVFORMAT_VERSION_MAJOR),
	"libswscale.so." GDV_STR(LIBSWSCALE_VERSION_MAJOR),
};

static const unsigned gdv_majors[GDV_NLIBS] = {
	LIBAVUTIL_VERSION_MAJOR, LIBAVCODEC_VERSION_MAJOR, LIBAVFORMAT_VERSION_MAJOR,
	LIBSWSCALE_VERSION_MAJOR,
};

const char *gdv_soname(int lib) {
	return lib >= 0 && lib < GDV_NLIBS ? gdv_sonames[lib] : "";
}

int gdv_load(const char *const paths[GDV_NLIBS], char *err, int errlen) {
	void *h[GDV_NLIBS] = {0};
	for (int i = 0; i < GDV_NLIBS; i++) {
		const char *p = paths && paths[i] ? paths[i] : gdv_sonames[i];
		h[i] = dlopen(p, RTLD_NOW | RTLD_LOCAL);
		if (!h[i]) {
			snprintf(err, errlen, "%s", dlerror());
			goto fail;
		}
	}
#define GDV_RESOLVE(lib, fn)                                                             \
	p_##fn = (__typeof__(&fn))dlsym(h[lib], #fn);                                        \
	if (!p_##fn) {                                                                       \
		snprintf(err, errlen, "%s has no function %s", gdv_sonames[lib], #fn);          \
		goto fail;                                                                       \
	}
	GDV_FUNCS(GDV_RESOLVE)
	unsigned got[GDV_NLIBS] = {p_avutil_version(), p_avcodec_version(), p_avformat_version(),
	                           p_swscale_version()};
	for (int i = 0; i < GDV_NLIBS; i++) {
		if (got[i] >> 16 != gdv_majors[i]) {
			snprintf(err, errlen, "%s is version %u.%u.%u; godali was built for major version %u",
			         paths && paths[i] ? paths[i] : gdv_sonames[i], got[i] >> 16,
			         (got[i] >> 8) & 0xff, got[i] & 0xff, gdv_majors[i]);
			goto fail;
		}
	}
	// FFmpeg's own messages would go to the host's stderr; errors come back as codes.
	p_av_log_set_level(AV_LOG_FATAL);
	return 0;
fail:
	for (int i = 0; i < GDV_NLIBS; i++) {
		if (h[i]) dlclose(h[i]);
	}
	return -1;
}

struct gdv_file {
	AVFormatContext *fmt;
	AVIOContext *avio; // memory input
	const uint8_t *mem;
	size_t mem_size;
	size_t mem_pos;
	int stream;
	AVCodecContext *dec;
	AVPacket *pkt;
	AVFrame *frame;
	int flushed; // the decoder was sent the end of the stream
	struct SwsContext *sws;
	int sws_fmt, sws_w, sws_h; // what the context converts
	int sws_space, sws_full;   // the colour settings it was given
	uint8_t *scratch;          // conversion rows for widths swscale's SIMD cannot end
	size_t scratch_size;
	AVBSFContext *bsf;         // gdv_annexb's filter (NULL: packets as demuxed)
	AVPacket *out;             // gdv_read_packet's current packet
	int bsf_eof;               // the filter was sent the end of the stream
	int too_big;               // the header's frame size is over max_pixels: gdv_decode refuses
};

static int mem_read(void *opaque, uint8_t *buf, int n) {
	gdv_file *f = opaque;
	size_t left = f->mem_size - f->mem_pos;
	if (left == 0) return AVERROR_EOF;
	if ((size_t)n > left) n = (int)left;
	memcpy(buf, f->mem + f->mem_pos, n);
	f->mem_pos += n;
	return n;
}

static int64_t mem_seek(void *opaque, int64_t off, int whence) {
	gdv_file *f = opaque;
	int64_t base;
	switch (whence & ~AVSEEK_FORCE) {
	case AVSEEK_SIZE: return (int64_t)f->mem_size;
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)f->mem_pos; break;
	case SEEK_END: base = (int64_t)f->mem_size; break;
	default: return AVERROR(EINVAL);
	}
	int64_t pos = base + off;
	if (pos < 0 || pos > (int64_t)f->mem_size) return AVERROR(EINVAL);
	f->mem_pos = (size_t)pos;
	return pos;
}

void gdv_strerror(int code, char *buf, int len) {
	if (p_av_strerror(code, buf, len) < 0) snprintf(buf, len, "FFmpeg error %d", code);
}

void gdv_close(gdv_file *f) {
	if (!f) return;
	if (f->sws) p_sws_freeContext(f->sws);
	if (f->scratch) p_av_freep(&f->scratch);
	if (f->frame) p_av_frame_free(&f->frame);
	if (f->out) p_av_packet_free(&f->out);
	if (f->bsf) p_av_bsf_free(&f->bsf);
	if (f->pkt) p_av_packet_free(&f->pkt);
	if (f->dec) p_avcodec_free_context(&f->dec);
	if (f->fmt) p_avformat_close_input(&f->fmt);
	if (f->avio) {
		p_av_freep(&f->avio->buffer);
		p_avio_context_free(&f->avio);
	}
	free(f);
}

static int fail(gdv_file *f, int code, const char *what, char *err, int errlen) {
	char msg[128];
	gdv_strerror(code, msg, sizeof msg);
	snprintf(err, errlen, "%s: %s", what, msg);
	gdv_close(f);
	return code < 0 ? code : -1;
}

// find_info is avformat_find_stream_info with every stream's probing decoder bounded to
// max_pixels a frame (0: FFmpeg's own bound), so that a frame size known only from the
// bitstream (a raw MJPEG or H.264 stream) is refused before its frame is allocated.
static int find_info(AVFormatContext *fmt, int64_t max_pixels) {
	if (max_pixels <= 0 || fmt->nb_streams == 0) return p_avformat_find_stream_info(fmt, NULL);
	AVDictionary **opts = calloc(fmt->nb_streams, sizeof *opts);
	if (!opts) return AVERROR(ENOMEM);
	int r = 0;
	for (unsigned i = 0; i < fmt->nb_streams && r >= 0; i++) r = p_av_dict_set_int(&opts[i], "max_pixels", max_pixels, 0);
	if (r >= 0) r = p_avformat_find_stream_info(fmt, opts);
	for (unsigned i = 0; i < fmt->nb_streams; i++) p_av_dict_free(&opts[i]);
	free(opts);
	return r;
}

int gdv_open(const char *path, const uint8_t *mem, size_t n, int threads, int64_t max_pixels, gdv_file **out,
             gdv_info *info, char *err, int errlen) {
	*out = NULL;
	gdv_file *f = calloc(1, sizeof *f);
	if (!f) return fail(f, AVERROR(ENOMEM), "out of memory", err, errlen);
	f->fmt = p_avformat_alloc_context();
	if (!f->fmt) return fail(f, AVERROR(ENOMEM), "out of memory", err, errlen);
	if (!path) {
		enum { bufsize = 1 << 16 };
		uint8_t *buf = p_av_malloc(bufsize);
		if (!buf) return fail(f, AVERROR(ENOMEM), "out of memory", err, errlen);
		f->mem = mem;
		f->mem_size = n;
		f->avio = p_avio_alloc_context(buf, bufsize, 0, f, mem_read, NULL, mem_seek);
		if (!f->avio) {
			p_av_freep(&buf);
			return fail(f, AVERROR(ENOMEM), "out of memory", err, errlen);
		}
		f->fmt->pb = f->avio;
		f->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
	}
	int r = p_avformat_open_input(&f->fmt, path ? path : "", NULL, NULL);
	if (r < 0) { // the context was freed
		f->fmt = NULL;
		return fail(f, r, "not a video container FFmpeg can read", err, errlen);
	}
	const AVCodec *codec = NULL;
	f->stream = p_av_find_best_stream(f->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
	if (f->stream < 0 || f->fmt->streams[f->stream]->codecpar->width == 0) {
		if ((r = find_info(f->fmt, max_pixels)) < 0)
			return fail(f, r, "no stream information", err, errlen);
		f->stream = p_av_find_best_stream(f->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
	}
	if (f->stream == AVERROR_DECODER_NOT_FOUND) {
		AVStream *st = NULL;
		for (unsigned i = 0; i < f->fmt->nb_streams; i++)
			if (f->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) st = f->fmt->streams[i];
		snprintf(err, errlen, "this FFmpeg has no decoder for the video codec %s",
		         st ? p_avcodec_get_name(st->codecpar->codec_id) : "?");
		gdv_close(f);
		return AVERROR_DECODER_NOT_FOUND;
	}
	if (f->stream < 0) return fail(f, f->stream, "no video stream", err, errlen);
	AVStream *st = f->fmt->streams[f->stream];
	// Packets of the other streams are dropped by the demuxer, not read and thrown away.
	for (unsigned i = 0; i < f->fmt->nb_streams; i++)
		if ((int)i != f->stream) f->fmt->streams[i]->discard = AVDISCARD_ALL;
	f->dec = p_avcodec_alloc_context3(codec);
	if (!f->dec) return fail(f, AVERROR(ENOMEM), "out of memory", err, errlen);
	if ((r = p_avcodec_parameters_to_context(f->dec, st->codecpar)) < 0)
		return fail(f, r, "decoder parameters", err, errlen);
	// The decoder refuses (before allocating it) a frame over max_pixels, whatever the
	// container's header said. A header already over it leaves the stream readable
	// (packets, index) but not decodable: the caller says which sample is too large.
	if (max_pixels > 0) {
		if ((int64_t)st->codecpar->width * st->codecpar->height > max_pixels) f->too_big = 1;
		else f->dec->max_pixels = max_pixels;
	}
	f->dec->thread_count = threads > 0 ? threads : 1;
	if (threads > 1) f->dec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
	if ((r = p_avcodec_open2(f->dec, codec, NULL)) < 0)
		return fail(f, r, "cannot open the decoder", err, errlen);
	f->pkt = p_av_packet_alloc();
	f->frame = p_av_frame_alloc();
	if (!f->pkt || !f->frame) return fail(f, AVERROR(ENOMEM), "out of memory", err, errlen);
	f->sws_space = -1;

	memset(info, 0, sizeof *info);
	info->width = st->codecpar->width;
	info->height = st->codecpar->height;
	info->tb_num = st->time_base.num;
	info->tb_den = st->time_base.den;
	info->fr_num = st->avg_frame_rate.num;
	info->fr_den = st->avg_frame_rate.den;
	info->nb_frames = st->nb_frames;
	info->color_space = st->codecpar->color_space;
	info->full_range = st->codecpar->color_range == AVCOL_RANGE_JPEG ||
	                   st->codecpar->format == AV_PIX_FMT_YUVJ420P || st->codecpar->format == AV_PIX_FMT_YUVJ422P ||
	                   st->codecpar->format == AV_PIX_FMT_YUVJ444P;
	const uint8_t *dm = p_av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, NULL);
	if (dm) {
		double rot = p_av_display_rotation_get((const int32_t *)dm);
		if (!isnan(rot)) info->rotation = rot;
	}
	snprintf(info->codec, sizeof info->codec, "%s", p_avcodec_get_name(st->codecpar->codec_id));
	const char *pf = p_av_get_pix_fmt_name(f->dec->pix_fmt);
	snprintf(info->pix_fmt, sizeof info->pix_fmt, "%s", pf ? pf : "unknown");
	*out = f;
	return 0;
}

int gdv_next_packet(gdv_file *f, int64_t *pts, int *key) {
	for (;;) {
		int r = p_av_read_frame(f->fmt, f->pkt);
		if (r == AVERROR_EOF) return 0;
		if (r < 0) return r;
		if (f->pkt->stream_index != f->stream) {
			p_av_packet_unref(f->pkt);
			continue;
		}
		*pts = f->pkt->pts != AV_NOPTS_VALUE ? f->pkt->pts : f->pkt->dts;
		if (*pts == AV_NOPTS_VALUE) *pts = INT64_MIN;
		*key = (f->pkt->flags & AV_PKT_FLAG_KEY) != 0;
		p_av_packet_unref(f->pkt);
		return 1;
	}
}

int gdv_seek(gdv_file *f, int64_t ts) {
	int r = p_avformat_seek_file(f->fmt, f->stream, INT64_MIN, ts, ts, 0);
	if (r < 0) return r;
	p_avcodec_flush_buffers(f->dec);
	f->flushed = 0;
	if (f->bsf) p_av_bsf_flush(f->bsf);
	f->bsf_eof = 0;
	return 0;
}

int gdv_annexb(gdv_file *f) {
	if (f->bsf) return 0;
	AVStream *st = f->fmt->streams[f->stream];
	const char *name = NULL;
	if (st->codecpar->codec_id == AV_CODEC_ID_H264) name = "h264_mp4toannexb";
	if (st->codecpar->codec_id == AV_CODEC_ID_HEVC) name = "hevc_mp4toannexb";
	if (!name) return 0;
	const AVBitStreamFilter *flt = p_av_bsf_get_by_name(name);
	if (!flt) return AVERROR_BSF_NOT_FOUND;
	int r = p_av_bsf_alloc(flt, &f->bsf);
	if (r < 0) return r;
	if ((r = p_avcodec_parameters_copy(f->bsf->par_in, st->codecpar)) < 0 ||
	    (f->bsf->time_base_in = st->time_base, (r = p_av_bsf_init(f->bsf)) < 0)) {
		p_av_bsf_free(&f->bsf);
		return r;
	}
	f->bsf_eof = 0;
	return 0;
}

int gdv_read_packet(gdv_file *f, const uint8_t **data, int *size, int64_t *pts, int *key) {
	if (!f->out && !(f->out = p_av_packet_alloc())) return AVERROR(ENOMEM);
	p_av_packet_unref(f->out);
	for (;;) {
		if (f->bsf) {
			int r = p_av_bsf_receive_packet(f->bsf, f->out);
			if (r == 0) break;
			if (r == AVERROR_EOF) return 0;
			if (r != AVERROR(EAGAIN)) return r;
			if (f->bsf_eof) return 0;
		}
		int r = p_av_read_frame(f->fmt, f->pkt);
		if (r == AVERROR_EOF) {
			if (!f->bsf) return 0;
			f->bsf_eof = 1;
			if ((r = p_av_bsf_send_packet(f->bsf, NULL)) < 0) return r;
			continue;
		}
		if (r < 0) return r;
		if (f->pkt->stream_index != f->stream) {
			p_av_packet_unref(f->pkt);
			continue;
		}
		if (!f->bsf) {
			p_av_packet_move_ref(f->out, f->pkt);
			break;
		}
		r = p_av_bsf_send_packet(f->bsf, f->pkt); // takes the packet's reference
		if (r < 0) {
			p_av_packet_unref(f->pkt);
			return r;
		}
	}
	*data = f->out->data;
	*size = f->out->size;
	*pts = f->out->pts != AV_NOPTS_VALUE ? f->out->pts : f->out->dts;
	if (*pts == AV_NOPTS_VALUE) *pts = INT64_MIN;
	*key = (f->out->flags & AV_PKT_FLAG_KEY) != 0;
	return 1;
}

// skippable: the stream's decoder drops non-reference pictures without touching the
// others' decoding when told AVDISCARD_NONREF.
static int skippable(const gdv_file *f) {
	enum AVCodecID id = f->fmt->streams[f->stream]->codecpar->codec_id;
	return id == AV_CODEC_ID_H264 || id == AV_CODEC_ID_HEVC;
}

int gdv_decode(gdv_file *f, int64_t skip_before, int64_t *pts) {
	if (f->too_big) return GDV_ETOOBIG;
	for (;;) {
		int r = p_avcodec_receive_frame(f->dec, f->frame);
		if (r == 0) {
			*pts = f->frame->pts != AV_NOPTS_VALUE ? f->frame->pts : f->frame->best_effort_timestamp;
			if (*pts == AV_NOPTS_VALUE) *pts = INT64_MIN;
			return 1;
		}
		if (r == AVERROR_EOF) return 0;
		if (r != AVERROR(EAGAIN)) return r;
		if (f->flushed) return 0;
		// The decoder wants input: the next packet of the stream, or the end.
		for (;;) {
			r = p_av_read_frame(f->fmt, f->pkt);
			if (r == AVERROR_EOF) {
				f->flushed = 1;
				r = p_avcodec_send_packet(f->dec, NULL);
				if (r < 0 && r != AVERROR_EOF) return r;
				break;
			}
			if (r < 0) return r;
			if (f->pkt->stream_index != f->stream) {
				p_av_packet_unref(f->pkt);
				continue;
			}
			// Read per packet by the decoder (and handed to its frame threads with it).
			f->dec->skip_frame = skip_before != INT64_MIN && f->pkt->pts != AV_NOPTS_VALUE &&
			                             f->pkt->pts < skip_before && skippable(f)
			                         ? AVDISCARD_NONREF
			                         : AVDISCARD_DEFAULT;
			r = p_avcodec_send_packet(f->dec, f->pkt);
			p_av_packet_unref(f->pkt);
			if (r < 0) return r;
			break;
		}
	}
}

int gdv_convert(gdv_file *f, uint8_t *dst, int w, int h, int linesize) {
	AVFrame *fr = f->frame;
	if (fr->width != w || fr->height != h) return -1;
	if (!f->sws || f->sws_fmt != fr->format || f->sws_w != w || f->sws_h != h) {
		if (f->sws) p_sws_freeContext(f->sws);
		f->sws = p_sws_getCachedContext(NULL, w, h, fr->format, w, h, AV_PIX_FMT_RGB24,
		                                SWS_BILINEAR, NULL, NULL, NULL);
		if (!f->sws) return AVERROR(EINVAL);
		f->sws_fmt = fr->format;
		f->sws_w = w;
		f->sws_h = h;
		f->sws_space = -1;
	}
	// The frame's colour matrix and range, as FFmpeg's scale filter reads them.
	int full = fr->color_range == AVCOL_RANGE_JPEG || fr->format == AV_PIX_FMT_YUVJ420P ||
	           fr->format == AV_PIX_FMT_YUVJ422P || fr->format == AV_PIX_FMT_YUVJ444P ||
	           fr->format == AV_PIX_FMT_YUVJ440P || fr->format == AV_PIX_FMT_YUVJ411P;
	int space = fr->colorspace;
	if (space != f->sws_space || full != f->sws_full) {
		p_sws_setColorspaceDetails(f->sws, p_sws_getCoefficients(space), full,
		                           p_sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
		f->sws_space = space;
		f->sws_full = full;
	}
	// swscale's x86 RGB converters write whole groups of 8 pixels and leave a row's last
	// pixels unwritten when the destination row has no room for the rest of the group;
	// such widths are converted into padded rows and copied.
	int direct = w % 8 == 0;
	int stride = direct ? linesize : FFALIGN(w, 64) * 3;
	uint8_t *out = dst;
	if (!direct) {
		size_t need = (size_t)stride * h;
		if (f->scratch_size < need) {
			p_av_freep(&f->scratch);
			f->scratch = p_av_malloc(need);
			f->scratch_size = f->scratch ? need : 0;
			if (!f->scratch) return AVERROR(ENOMEM);
		}
		out = f->scratch;
	}
	uint8_t *planes[4] = {out, NULL, NULL, NULL};
	int strides[4] = {stride, 0, 0, 0};
	int r = p_sws_scale(f->sws, (const uint8_t *const *)fr->data, fr->linesize, 0, h, planes, strides);
	if (r != h) return r < 0 ? r : AVERROR_BUG;
	if (!direct) {
		for (int y = 0; y < h; y++) memcpy(dst + (size_t)y * linesize, out + (size_t)y * stride, (size_t)w * 3);
	}
	return 0;
}
