// Package recordio reads MXNet RecordIO files (.rec), their .idx index files and
// the image-record header (IRHeader) mxnet.recordio.pack puts in front of each
// payload, without the engine.
//
// A .rec file is a sequence of parts, each a little-endian uint32 magic 0xced7230a,
// a uint32 whose top 3 bits are the continuation flag and low 29 bits the part's
// length, the part's bytes, and zero padding to a multiple of 4. Flag 0 is a whole
// record; a record whose bytes contain the magic at a 4-aligned position is written
// as parts flagged 1 (first), 2 (middle) and 3 (last), split where the magic was,
// and reading puts the magic back between them.
//
// A payload written by mxnet.recordio.pack starts with a 24-byte header: uint32
// flag, float32 label, uint64 id, uint64 id2. A flag greater than zero means the
// label is an array of flag float32 values that follows the header.
//
// The .idx file (MXIndexedRecordIO) is text, one "<key>\t<offset>" line per record.
package recordio
