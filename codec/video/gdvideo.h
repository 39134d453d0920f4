// gdvideo: the C side of package video. FFmpeg's libraries (libavutil, libavcodec,
// libavformat, libswscale) are opened with dlopen at first use, never linked, so that a
// library built with this file loads on hosts without them.
#ifndef GODALI_GDVIDEO_H
#define GODALI_GDVIDEO_H

#include <stddef.h>
#include <stdint.h>

// Library indices for gdv_load's paths and gdv_soname.
enum { GDV_AVUTIL = 0, GDV_AVCODEC = 1, GDV_AVFORMAT = 2, GDV_SWSCALE = 3, GDV_NLIBS = 4 };

// gdv_soname is the soname the headers were written for ("libavcodec.so.59").
const char *gdv_soname(int lib);

// gdv_load opens the four libraries (paths[i] or, when NULL, the soname), resolves the
// functions and checks each library's major version against the headers'. 0 on success;
// otherwise err says what is missing.
int gdv_load(const char *const paths[GDV_NLIBS], char *err, int errlen);

typedef struct gdv_file gdv_file;

// GDV_ETOOBIG: gdv_decode's answer for a stream whose header declares frames over
// gdv_open's max_pixels (no FFmpeg error has this value).
enum { GDV_ETOOBIG = -0x67647462 };

typedef struct {
	int width, height;
	int tb_num, tb_den;        // the stream's time base
	int fr_num, fr_den;        // its average frame rate (0/0 when unknown)
	int64_t nb_frames;         // the container's frame count (0 when unknown)
	double rotation;           // display matrix rotation in degrees (0 without one)
	int color_space;           // the stream's AVColorSpace (2: unspecified)
	int full_range;            // 1: full-range (JPEG) levels, 0: limited (MPEG) levels
	char codec[32];            // the codec's short name
	char pix_fmt[32];          // the decoder's pixel format name
} gdv_info;

// gdv_open opens a file by path, or, with path NULL, mem[0:n] (which must stay valid
// until gdv_close). threads bounds the decoder's own threads (1: none). max_pixels > 0
// bounds a decoded frame's width x height (FFmpeg's max_pixels): larger frames are
// refused before they are allocated, whatever the container says. 0 on success.
int gdv_open(const char *path, const uint8_t *mem, size_t n, int threads, int64_t max_pixels, gdv_file **out,
             gdv_info *info, char *err, int errlen);

// gdv_next_packet reads the next packet of the video stream without decoding it: its
// presentation time (the decode time when the container has none; INT64_MIN when neither)
// and whether it is a key frame. 1: a packet, 0: end of file, < 0: an FFmpeg error.
int gdv_next_packet(gdv_file *f, int64_t *pts, int *key);

// gdv_seek moves to the key frame at or before ts (the stream's time base; INT64_MIN:
// the beginning) and resets the decoder. 0 or an FFmpeg error.
int gdv_seek(gdv_file *f, int64_t ts);

// gdv_decode decodes the next frame in presentation order. 1: a frame (*pts its time,
// INT64_MIN when unknown), 0: end of stream, < 0: an FFmpeg error. Frames presented
// before skip_before (INT64_MIN: none), which the caller will not deliver, are not decoded
// at all where no other frame refers to them (H.264 and HEVC non-reference pictures:
// FFmpeg's AVDISCARD_NONREF), so that they are never returned; the others are decoded
// exactly as without it.
int gdv_decode(gdv_file *f, int64_t skip_before, int64_t *pts);

// gdv_convert writes the last decoded frame as packed RGB24 into dst (h rows of
// linesize bytes). 0, -1 when the frame is not w x h, or an FFmpeg error.
int gdv_convert(gdv_file *f, uint8_t *dst, int w, int h, int linesize);

// gdv_annexb makes gdv_read_packet give H.264 and HEVC packets in Annex B form (start
// codes, parameter sets before key frames), the form a hardware decoder's parser reads.
// Other codecs' packets pass unchanged. 0, or an FFmpeg error.
int gdv_annexb(gdv_file *f);

// gdv_read_packet reads the next packet of the video stream (filtered by gdv_annexb when
// enabled): *data and *size stay valid until the next call, gdv_seek or gdv_close; *pts
// as gdv_next_packet. 1: a packet, 0: end of stream, < 0: an FFmpeg error.
int gdv_read_packet(gdv_file *f, const uint8_t **data, int *size, int64_t *pts, int *key);

void gdv_close(gdv_file *f);

// gdv_strerror describes an FFmpeg error code.
void gdv_strerror(int code, char *buf, int len);

#endif
