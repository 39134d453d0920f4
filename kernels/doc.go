// Package kernels holds godali's CUDA kernels (kernels.cu) and the Go code that plans
// and launches them: resize with PIL-compatible antialiasing (which also serves random
// resized crop, as a resize of a region), crop, flip, and the fused crop-mirror-normalize
// from uint8 HWC to float, half, uint8 or int8 in CHW or HWC layout.
//
// The kernels know nothing about pipelines. A batch is described on the host (plan.go,
// plain Go): per-sample descriptors, the resampling weights and the normalisation tables
// are computed here with the CPU operator's arithmetic (imaging) and uploaded with
// one copy; the kernels then do integer resampling and table lookups, so a GPU operator's
// output equals the CPU operator's bit for bit. The tests check the plans on the CPU by
// running a line-by-line Go transcription of the kernels against imaging; the GPU
// tests compare the device results with imaging directly.
//
// kernels.cu is compiled by nvcc (kernels/Makefile) into a fatbin with SASS for sm_70,
// sm_80, sm_90 and compute_90 PTX, which the cuda-tagged code embeds from fatbin/ and
// loads with cuModuleLoadData. The fatbin is a build output, never committed; a cuda
// build without it compiles, and Load reports that the kernels were not built.
package kernels
