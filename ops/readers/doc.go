// Package readers holds the reader operators (readers.file, numpy, mxnet, caffe, caffe2): they choose the samples of each
// batch (engine.BatchSource) and read their bytes through a source.Source.
//
// Its operators register themselves from init functions (see package ops).
package readers
