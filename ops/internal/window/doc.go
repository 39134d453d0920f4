// Package window parses the crop and slice window arguments that operators of several
// families share (decoders.image_random_crop and random_resized_crop, slice and
// decoders.image_slice, random_crop_generator), so that no family imports another.
package window
