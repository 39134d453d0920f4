// Package tfrecord reads TFRecord files, their DALI/tfrecord2idx index files and
// the tf.train.Example records they usually hold, without the engine.
//
// A TFRecord file is a sequence of frames: a little-endian uint64 payload length,
// the masked CRC-32C of those 8 bytes, the payload, and the masked CRC-32C of the
// payload (mask: rotate right by 15, add 0xa282ead8). The index format of DALI's
// tfrecord2idx tool (and of the tfrecord package's) is a text file with one line
// "<offset> <size>" per record, where size counts the whole frame (payload + 16).
//
// Example parsing reads the protobuf wire format with protowire: the features map
// of string to Feature, each a bytes_list, a float_list or an int64_list, packed or
// not. Feature specs follow DALI's tfrec.FixedLenFeature and tfrec.VarLenFeature
// with the int64, float32 and string types.
//
// Lengths taken from the data are checked against the file size before anything
// is allocated; errors wrap formats.ErrMalformed.
package tfrecord
