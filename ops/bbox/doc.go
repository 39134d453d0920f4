// Package bbox holds the bounding-box operators of DALI's detection pipelines:
// bb_flip and random_bbox_crop. Boxes are float32 [N, 4] tensors per sample, N
// varying between samples, in coordinates relative to the image (0 to 1).
package bbox
