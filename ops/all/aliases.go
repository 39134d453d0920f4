package all

import "github.com/godali/godali/engine"

// DALI's former flat operator names (DALI still accepts them, with a deprecation
// warning in Python), as aliases of the current ones: a pipeline description may name
// either, from C as from Python.
func init() {
	for alias, op := range map[string]string{
		"file_reader":               "readers.file",
		"coco_reader":               "readers.coco",
		"caffe_reader":              "readers.caffe",
		"caffe2_reader":             "readers.caffe2",
		"mxnet_reader":              "readers.mxnet",
		"tfrecord_reader":           "readers.tfrecord",
		"numpy_reader":              "readers.numpy",
		"sequence_reader":           "readers.sequence",
		"video_reader":              "readers.video",
		"image_decoder":             "decoders.image",
		"image_decoder_random_crop": "decoders.image_random_crop",
		"image_decoder_crop":        "decoders.image_crop",
		"image_decoder_slice":       "decoders.image_slice",
		"coin_flip":                 "random.coin_flip",
		"uniform":                   "random.uniform",
		"normal_distribution":       "random.normal",
		"transform_translation":     "transforms.translation",
	} {
		engine.RegisterAlias(alias, op)
	}
}
