// Package decoders holds decoders.image and decoders.image_random_crop: libjpeg-turbo and
// the codec package on the CPU; nvJPEG (hardware, CUDA and hybrid decoders) on device
// "mixed" in the CUDA flavour.
//
// Its operators register themselves from init functions (see package ops).
package decoders
