// Package readers holds the reader operators (docs/operators-reference.md lists them)
// and Base, what they share: they choose the samples of each batch
// (engine.BatchSource) and read their bytes through a source.Source (local, or
// remote.FS for s3://, az://, gs:// and http(s):// paths).
//
// Its operators register themselves from init functions (see package ops).
package readers
