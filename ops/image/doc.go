// Package image holds the image operators: geometry, color, filters, noise and the
// fused resize/crop/normalize paths (docs/operators-reference.md lists them). The CPU
// variants compute with imaging; the gpu
// variants (files *_gpu.go, CUDA flavour) launch kernels/.
//
// Its operators register themselves from init functions (see package ops).
package image
