// Package imaging holds godali's CPU image kernels: resampling, crop, flip and the
// crop_mirror_normalize conversion, on interleaved HWC uint8 images (row-major, row
// stride W*C). The kernels know nothing about pipelines; operators call them once per
// sample with a per-worker Scratch so that the steady state does not allocate.
//
// Resampling follows PIL's separable convolution (horizontal pass first, the
// intermediate rounded to uint8, 22-bit fixed-point weights, weights that fall outside
// the image dropped and the rest renormalised), which is also what DALI's
// INTERP_TRIANGULAR reproduces, so results match torchvision/PIL pipelines.
//
// Float outputs are written in little-endian byte order. Output buffers of 2- or 4-byte
// elements must be aligned to the element size (pool and Go allocations are).
package imaging
