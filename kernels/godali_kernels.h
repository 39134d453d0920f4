/*
 * godali_kernels.h: the descriptors godali's CUDA kernels read, one per sample, shared by
 * kernels.cu and the Go code that fills them (kernels_cuda.go checks the layout at
 * compile time). Pointers are device addresses stored as 64-bit integers.
 */
#ifndef GODALI_KERNELS_H_
#define GODALI_KERNELS_H_

#include <stdint.h>

/* Fixed-point precision of the resampling weights: PIL's value, so that the GPU resize
 * matches the CPU operator (imaging) bit for bit. */
#define GODALI_PRECISION_BITS 22

/* godali_resize_desc: one sample of a separable resize. The horizontal pass writes
 * source rows [row0, row1) resampled to dst_w columns into tmp (rounded to uint8, as
 * PIL does); the vertical pass reads them into dst. Taps are int32 triples (first source
 * index, count, offset into the weights array); sample s's horizontal taps start at
 * taps[3*htaps], one per output column, its vertical ones at taps[3*vtaps], one per
 * output row. */
typedef struct {
  uint64_t src;        /* uint8 HWC, src_stride bytes per row */
  uint64_t dst;        /* uint8 HWC, dst_w * channels bytes per row */
  uint64_t tmp;        /* (row1 - row0) rows of dst_w * channels bytes */
  int32_t src_w, src_h, src_stride;
  int32_t dst_w, dst_h;
  int32_t channels;
  int32_t row0, row1;
  int32_t htaps, vtaps;
} godali_resize_desc;

/* godali_cmn_desc: one sample of crop_mirror_normalize. Output pixel (ox, oy) reads
 * source pixel (crop_x + ox, crop_y + oy), or (crop_x + crop_w - 1 - ox, ...) when
 * mirrored; pixels outside the source and padding channels are 0. Each channel's 256
 * possible values are looked up in lut (channels tables of 256 elements of elem_size
 * bytes), which holds the CPU operator's exact results. */
typedef struct {
  uint64_t src;
  uint64_t dst;
  uint64_t lut;
  int32_t src_w, src_h, src_stride, channels;
  int32_t crop_x, crop_y, crop_w, crop_h;
  int32_t out_channels; /* channels, or the next power of two with pad_output */
  int32_t elem_size;    /* 4 float, 2 half, 1 uint8/int8 */
  int32_t chw;          /* 1: planar output */
  int32_t mirror;
} godali_cmn_desc;

/* godali_crop_desc: a w x h window at (x, y) of a uint8 HWC image, optionally mirrored
 * (flip_h) and/or upside down (flip_v); pixels outside the source are set to fill. */
typedef struct {
  uint64_t src;
  uint64_t dst;         /* w * channels bytes per row */
  int32_t src_w, src_h, src_stride, channels;
  int32_t x, y, w, h;
  int32_t fill;
  int32_t flip_h, flip_v;
  int32_t reserved;
} godali_crop_desc;

/* godali_color_desc: one sample of brightness_contrast, hsv or color_twist on a dense
 * w x h uint8 HWC image (src_stride bytes per row), written dense to dst as uint8
 * (rounded half away from zero and saturated, NaN 0) or float32 (out_float). With matrix,
 * each 3-channel pixel (r, g, b) becomes out[i] = ((m[3i]*r + m[3i+1]*g) + m[3i+2]*b) +
 * off[i]; without, every channel value v becomes m[0]*v + off[0]. Every operation is
 * rounded to float32 on its own, in that order (no FMA), as imaging does. */
typedef struct {
  uint64_t src;
  uint64_t dst;
  int32_t w, h, src_stride, channels;
  int32_t matrix;
  int32_t out_float;
  float m[9];
  float off[3];
} godali_color_desc;

#endif /* GODALI_KERNELS_H_ */
