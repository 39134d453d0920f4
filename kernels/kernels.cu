// godali's CUDA kernels. They know nothing about pipelines: each launch processes a
// batch of samples described by an array of descriptors (godali_kernels.h), one sample
// per grid z index, one output pixel per thread. The arithmetic mirrors the CPU kernels
// in imaging exactly (integer resampling with PIL's weights, normalisation
// through tables computed on the host, float32 color transforms rounded operation by
// operation in the CPU's order), so GPU and CPU operators agree bit for bit.

#include <stdint.h>

#include "godali_kernels.h"

#define GD_FIXED_HALF (1 << (GODALI_PRECISION_BITS - 1))

__device__ __forceinline__ uint8_t gd_clip8(int32_t v) {
  v >>= GODALI_PRECISION_BITS;  // arithmetic shift, as in Go
  return v < 0 ? 0 : (v > 255 ? 255 : (uint8_t)v);
}

// Horizontal pass: tmp row r (source row row0 + r) resampled to dst_w columns.
extern "C" __global__ void godali_resize_h(const godali_resize_desc *descs, const int32_t *taps,
                                           const int32_t *weights) {
  const godali_resize_desc *d = &descs[blockIdx.z];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d->dst_w || r >= d->row1 - d->row0) return;
  const int c = d->channels;
  const int32_t *t = taps + 3 * (size_t)(d->htaps + x);
  const int n = t[1];
  const int32_t *w = weights + t[2];
  const uint8_t *in = (const uint8_t *)d->src + (size_t)(d->row0 + r) * d->src_stride + (size_t)t[0] * c;
  uint8_t *out = (uint8_t *)d->tmp + ((size_t)r * d->dst_w + x) * c;
  if (c == 3) {
    int32_t s0 = GD_FIXED_HALF, s1 = GD_FIXED_HALF, s2 = GD_FIXED_HALF;
    for (int k = 0; k < n; k++) {
      const int32_t wk = w[k];
      s0 += wk * (int32_t)in[3 * k];
      s1 += wk * (int32_t)in[3 * k + 1];
      s2 += wk * (int32_t)in[3 * k + 2];
    }
    out[0] = gd_clip8(s0);
    out[1] = gd_clip8(s1);
    out[2] = gd_clip8(s2);
    return;
  }
  for (int ch = 0; ch < c; ch++) {
    int32_t s = GD_FIXED_HALF;
    for (int k = 0; k < n; k++) s += w[k] * (int32_t)in[k * c + ch];
    out[ch] = gd_clip8(s);
  }
}

// Vertical pass: dst row y from the tmp rows under its filter.
extern "C" __global__ void godali_resize_v(const godali_resize_desc *descs, const int32_t *taps,
                                           const int32_t *weights) {
  const godali_resize_desc *d = &descs[blockIdx.z];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d->dst_w || y >= d->dst_h) return;
  const int c = d->channels;
  const size_t rowlen = (size_t)d->dst_w * c;
  const int32_t *t = taps + 3 * (size_t)(d->vtaps + y);
  const int n = t[1];
  const int32_t *w = weights + t[2];
  const uint8_t *in = (const uint8_t *)d->tmp + (size_t)(t[0] - d->row0) * rowlen + (size_t)x * c;
  uint8_t *out = (uint8_t *)d->dst + (size_t)y * rowlen + (size_t)x * c;
  for (int ch = 0; ch < c; ch++) {
    int32_t s = GD_FIXED_HALF;
    for (int k = 0; k < n; k++) s += w[k] * (int32_t)in[k * rowlen + ch];
    out[ch] = gd_clip8(s);
  }
}

// crop_mirror_normalize: uint8 HWC in, float/half/uint8/int8 CHW or HWC out.
extern "C" __global__ void godali_cmn(const godali_cmn_desc *descs) {
  const godali_cmn_desc *d = &descs[blockIdx.z];
  const int ox = blockIdx.x * blockDim.x + threadIdx.x;
  const int oy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ox >= d->crop_w || oy >= d->crop_h) return;
  const int sx = d->mirror ? d->crop_x + d->crop_w - 1 - ox : d->crop_x + ox;
  const int sy = d->crop_y + oy;
  const bool inside = sx >= 0 && sx < d->src_w && sy >= 0 && sy < d->src_h;
  const uint8_t *px = inside ? (const uint8_t *)d->src + (size_t)sy * d->src_stride + (size_t)sx * d->channels : 0;
  const size_t plane = (size_t)d->crop_w * d->crop_h;
  const size_t pix = (size_t)oy * d->crop_w + ox;
  for (int ch = 0; ch < d->out_channels; ch++) {
    const size_t i = d->chw ? ch * plane + pix : pix * d->out_channels + ch;
    const bool val = inside && ch < d->channels;
    const int v = val ? px[ch] : 0;
    switch (d->elem_size) {
      case 4:
        ((uint32_t *)d->dst)[i] = val ? __ldg((const uint32_t *)d->lut + ch * 256 + v) : 0u;
        break;
      case 2:
        ((uint16_t *)d->dst)[i] = val ? __ldg((const uint16_t *)d->lut + ch * 256 + v) : (uint16_t)0;
        break;
      default:
        ((uint8_t *)d->dst)[i] = val ? __ldg((const uint8_t *)d->lut + ch * 256 + v) : (uint8_t)0;
    }
  }
}

// crop and flip: a window of a uint8 HWC image, mirrored on request, filled outside.
extern "C" __global__ void godali_crop(const godali_crop_desc *descs) {
  const godali_crop_desc *d = &descs[blockIdx.z];
  const int ox = blockIdx.x * blockDim.x + threadIdx.x;
  const int oy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ox >= d->w || oy >= d->h) return;
  const int sx = d->flip_h ? d->x + d->w - 1 - ox : d->x + ox;
  const int sy = d->flip_v ? d->y + d->h - 1 - oy : d->y + oy;
  const int c = d->channels;
  uint8_t *out = (uint8_t *)d->dst + ((size_t)oy * d->w + ox) * c;
  if (sx < 0 || sx >= d->src_w || sy < 0 || sy >= d->src_h) {
    for (int ch = 0; ch < c; ch++) out[ch] = (uint8_t)d->fill;
    return;
  }
  const uint8_t *in = (const uint8_t *)d->src + (size_t)sy * d->src_stride + (size_t)sx * c;
  for (int ch = 0; ch < c; ch++) out[ch] = in[ch];
}

// imaging's SatU8 (DALI's ConvertSat to uint8): round half away from zero, then
// saturate; NaN gives 0. v - trunc(v) is exact in float32, so the test of the fraction
// is the exact floor(v + 0.5) of the CPU.
__device__ __forceinline__ uint8_t gd_sat_u8(float v) {
  if (v >= 254.5f) return 255;
  if (v > 0.0f) {  // also false for NaN
    const int t = (int)v;
    return (uint8_t)(t + (v - (float)t >= 0.5f ? 1 : 0));
  }
  return 0;
}

// brightness_contrast, hsv and color_twist: out = M * in + off per pixel (matrix) or
// m[0] * v + off[0] per channel value, with the CPU's float32 operations in its order.
extern "C" __global__ void godali_color(const godali_color_desc *descs) {
  const godali_color_desc *d = &descs[blockIdx.z];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d->w || y >= d->h) return;
  const int c = d->channels;
  const uint8_t *in = (const uint8_t *)d->src + (size_t)y * d->src_stride + (size_t)x * c;
  const size_t o = ((size_t)y * d->w + x) * c;
  if (d->matrix) {
    const float r = in[0], g = in[1], b = in[2];
    for (int i = 0; i < 3; i++) {
      float v = __fadd_rn(__fmul_rn(d->m[3 * i], r), __fmul_rn(d->m[3 * i + 1], g));
      v = __fadd_rn(v, __fmul_rn(d->m[3 * i + 2], b));
      v = __fadd_rn(v, d->off[i]);
      if (d->out_float)
        ((float *)d->dst)[o + i] = v;
      else
        ((uint8_t *)d->dst)[o + i] = gd_sat_u8(v);
    }
    return;
  }
  const float scale = d->m[0], offset = d->off[0];
  for (int ch = 0; ch < c; ch++) {
    const float v = __fadd_rn(__fmul_rn((float)in[ch], scale), offset);
    if (d->out_float)
      ((float *)d->dst)[o + ch] = v;
    else
      ((uint8_t *)d->dst)[o + ch] = gd_sat_u8(v);
  }
}

// NV12 (a hardware video decoder's output: a luma plane, then a plane of interleaved
// Cb/Cr samples at half resolution both ways, pitch bytes per row) to packed RGB, one
// thread per pixel of one frame. A chroma sample covers the 2x2 luma block it sits on
// (no interpolation, as FFmpeg's unscaled 4:2:0 converters). With the coefficients of
// YUVMatrix (kernels/yuv.go): Y' = (Y - y_off) * y_scale, R = Y' + cr_v * (Cr - 128),
// G = Y' - cg_u * (Cb - 128) - cg_v * (Cr - 128), B = Y' + cb_u * (Cb - 128), rounded.
extern "C" __global__ void godali_nv12_rgb(uint64_t luma, uint64_t chroma, int32_t pitch, int32_t w,
                                           int32_t h, uint64_t dst, int32_t dst_pitch, float y_off,
                                           float y_scale, float cr_v, float cg_u, float cg_v,
                                           float cb_u) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const uint8_t *yp = (const uint8_t *)luma + (size_t)y * pitch + x;
  const uint8_t *cp = (const uint8_t *)chroma + (size_t)(y >> 1) * pitch + (size_t)(x >> 1) * 2;
  const float yy = ((float)yp[0] - y_off) * y_scale;
  const float cb = (float)cp[0] - 128.0f;
  const float cr = (float)cp[1] - 128.0f;
  float rgb[3] = {yy + cr_v * cr, yy - cg_u * cb - cg_v * cr, yy + cb_u * cb};
  uint8_t *out = (uint8_t *)dst + (size_t)y * dst_pitch + (size_t)x * 3;
  for (int c = 0; c < 3; c++) {
    const float v = rgb[c];
    out[c] = v <= 0.0f ? 0 : (v >= 255.0f ? 255 : (uint8_t)(int)(v + 0.5f));
  }
}
