package image

import "github.com/godali/godali/engine"

// The image operators that take sequences (FHWC) frame by frame, as DALI's do: every
// frame of a sample gets the sample's random choices and arguments, fn.per_frame
// arguments one value per frame (engine/sequence.go).
func init() {
	engine.MarkSequenceOps("resize", "crop", "flip", "crop_mirror_normalize", "random_resized_crop",
		"brightness_contrast", "brightness", "contrast", "hsv", "hue", "saturation", "color_twist",
		"color_space_conversion", "rotate", "warp_affine", "gaussian_blur",
		"laplacian", "resize_crop_mirror", "fast_resize_crop_mirror")
	engine.MarkChannelFramedOps("gaussian_blur", "laplacian")
}
