// Package decoders holds the image and video decoders (docs/operators-reference.md lists
// them): libjpeg-turbo, the codec package and FFmpeg on the CPU; nvJPEG (hardware, CUDA
// and hybrid decoders) and NVDEC on device "mixed" in the CUDA flavour.
//
// Its operators register themselves from init functions (see package ops).
package decoders
