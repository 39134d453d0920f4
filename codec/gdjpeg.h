/*
 * gdjpeg.h: the C half of package codec. libjpeg reports errors with longjmp, which must
 * never cross a Go frame, so every libjpeg call happens inside one of these functions,
 * each of which sets its own jump target and returns a status instead.
 *
 * Go pointers (the encoded bytes, the destination) are used only while a call runs:
 * before returning, every function clears the libjpeg source manager's copy of the input
 * pointer.
 */
#ifndef GODALI_CODEC_GDJPEG_H_
#define GODALI_CODEC_GDJPEG_H_

#include <stddef.h>

/* Pixel layouts of a source row handed to gd_emit. */
enum {
  GD_PF_GRAY = 0,     /* 1 byte: luma */
  GD_PF_RGB = 1,      /* 3 bytes */
  GD_PF_BGR = 2,      /* 3 bytes */
  GD_PF_RGBX = 3,     /* 4 bytes, the 4th ignored (alpha is dropped, as PIL's convert does) */
  GD_PF_CMYK = 4,     /* 4 bytes, plain CMYK (TIFF) */
  GD_PF_CMYK_INV = 5  /* 4 bytes, Adobe-inverted CMYK as libjpeg returns it */
};

/* Output layouts. */
enum { GD_OUT_RGB = 0, GD_OUT_BGR = 1, GD_OUT_GRAY = 2 };
/* How colours are converted (gd_emit, gd_job.rule): as PIL does, or as DALI 2.4's
 * decoders do: GRAY of colour by OpenCV's or libpng's 601 luma; for JPEG, GRAY as
 * libjpeg's grayscale output and CMYK to RGB truncated (codec.Options.DALIColor). */
enum { GD_RULE_PIL = 0, GD_RULE_OPENCV = 1, GD_RULE_LIBPNG = 2, GD_RULE_DALI_JPEG = 3 };

/* gd_header: what jpeg_read_header found. */
typedef struct {
  unsigned width, height;
  int components;
  int color_space; /* J_COLOR_SPACE */
  int progressive;
  int arithmetic;
  int precision;
  unsigned long long coef_bytes; /* whole-image coefficient buffer (progressive mode) */
  unsigned long long blocks;     /* 8x8 blocks the scans code at least (no iMCU padding) */
} gd_header;

/* gd_job: one decode request, computed by the Go side. All ROI coordinates are in the
 * stored (not yet oriented) image, after DCT scaling. */
typedef struct {
  unsigned image_w, image_h;   /* the header the plan was made for */
  int scale_num;               /* DCT scaling: scale_num / 8 */
  unsigned scaled_w, scaled_h; /* expected libjpeg output size at that scale */
  unsigned rx, ry, rw, rh;     /* region to decode */
  int out;                     /* GD_OUT_* */
  int orientation;             /* EXIF 1..8, applied while writing rows */
  long long max_pixels;        /* >0: refuse larger headers */
  int fast_idct;               /* 1: JDCT_IFAST instead of JDCT_ISLOW */
  int rule;                    /* GD_RULE_*: GD_RULE_DALI_JPEG: DALI's colour conversions */
  long long max_memory;        /* >0: libjpeg's max_memory_to_use; larger needs fail */
  unsigned dst_x, dst_y;       /* where the oriented region lands in dst, in pixels */
  unsigned dst_pitch;          /* pixels per dst row (the oriented region's width when packed) */
} gd_job;

typedef struct gd_jpeg_impl gd_jpeg_impl;

/* gd_jpeg: per-worker state. job and hdr are written and read by Go between calls. */
typedef struct {
  gd_job job;
  gd_header hdr;
  char msg[256]; /* message of the last failure */
  gd_jpeg_impl *impl;
} gd_jpeg;

gd_jpeg *gd_jpeg_new(void);
void gd_jpeg_free(gd_jpeg *s);

/* gd_jpeg_header reads the markers up to the first scan into s->hdr.
 * Returns 0, or -1 with s->msg set (1 when the data ended prematurely). */
int gd_jpeg_header(gd_jpeg *s, const unsigned char *data, size_t len);

/* gd_jpeg_decode decodes the region s->job describes into dst (HWC, oriented), at
 * (dst_x, dst_y) of an image dst_pitch pixels wide; the rest of dst is not written.
 * Returns 0, -1 with s->msg set, or 1 when the data ended prematurely. */
int gd_jpeg_decode(gd_jpeg *s, const unsigned char *data, size_t len, unsigned char *dst,
                   size_t dst_len);

/* gd_emit converts rows [ry, ry+rh) x columns [rx, rx+rw) of a source image (layout pf,
 * stride bytes per row) to layout out (colours converted by rule, GD_RULE_*) and
 * writes them into dst with EXIF orientation applied. */
void gd_emit(const unsigned char *src, size_t stride, int pf, unsigned rx, unsigned ry,
             unsigned rw, unsigned rh, int orientation, int out, int rule, unsigned char *dst);

#endif /* GODALI_CODEC_GDJPEG_H_ */
