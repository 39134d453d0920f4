// Package bbox holds the bounding-box and point operators of DALI's detection
// pipelines (docs/operators-reference.md lists them). Boxes are float32 [N, 4] tensors per sample, N
// varying between samples, in coordinates relative to the image (0 to 1).
package bbox
