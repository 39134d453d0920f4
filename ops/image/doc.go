// Package image holds the image operators: resize, random_resized_crop, crop, flip,
// crop_mirror_normalize, the color operators (brightness_contrast, hsv, color_twist),
// rotate and gaussian_blur. The CPU variants compute with imaging; the gpu
// variants (files *_gpu.go, CUDA flavour) launch kernels/.
//
// Its operators register themselves from init functions (see package ops).
package image
