/*
 * gdjpegenc.h: libjpeg compression round trip (encode at a quality, decode again), the
 * C half of codec's JPEGDistorter. Like gdjpeg.h, every libjpeg call runs inside these
 * functions behind their own jump target; Go memory is used only during a call.
 */
#ifndef GODALI_CODEC_GDJPEGENC_H_
#define GODALI_CODEC_GDJPEGENC_H_

#include <stddef.h>

typedef struct gd_jpegenc gd_jpegenc;

/* gd_jpegenc_new returns per-worker state (a compress and a decompress object and a
 * grow-only buffer for the encoded bytes), or NULL when out of memory. */
gd_jpegenc *gd_jpegenc_new(void);
void gd_jpegenc_free(gd_jpegenc *s);

/* gd_jpegenc_roundtrip encodes the w x h RGB image src (HWC, 3 bytes a pixel) as a
 * baseline JPEG at quality (1..100, libjpeg's quality scaling of the standard tables,
 * 4:2:0 chroma subsampling, islow DCT, no optimized tables) and decodes it into dst (the
 * same layout; src and dst may be the same buffer). Returns 0, or -1 with msg set. */
int gd_jpegenc_roundtrip(gd_jpegenc *s, const unsigned char *src, unsigned w, unsigned h,
                         int quality, unsigned char *dst, char *msg, size_t msg_len);

/* gd_jpegenc_encoded_size is the size of the last encoded image, in bytes. */
size_t gd_jpegenc_encoded_size(const gd_jpegenc *s);

#endif
