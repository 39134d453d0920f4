// Package caffe parses the protobuf messages Caffe and Caffe2 keep in their LMDB
// databases, without the engine and without generated code: a Caffe Datum (one image,
// raw or encoded, and an integer label) and a Caffe2 TensorProtos (a list of
// TensorProto: image, labels, extra tensors).
//
// Both are proto2 messages. Fields this package does not know are skipped; a repeated
// numeric field is accepted packed or not, as protobuf parsers do. Everything is
// parsed with google.golang.org/protobuf/encoding/protowire; errors wrap
// formats.ErrMalformed.
package caffe
