// Package formats holds what godali's container-format packages share: the error
// they wrap when bytes do not follow their format, and bounded reads from an
// io.ReaderAt of known size.
//
// The format packages themselves (formats/tar, formats/tfrecord, formats/recordio,
// formats/npy) know nothing about pipelines or the engine. Each works over an
// io.ReaderAt plus the size of the data (a local file, a memory map, or a ranged
// reader of an object store) and over a byte slice (bytes.NewReader). Every length
// read from the data is checked against the data's size, or against a stated
// maximum for metadata, before anything is allocated, so hostile or truncated
// inputs produce errors wrapping ErrMalformed and never panic or exhaust memory.
package formats
