// Package tar scans tar archives into webdataset samples and reads and writes
// DALI's webdataset index files, without the engine.
//
// A webdataset shard is a plain tar archive whose regular files belong together when
// their names share a key: the path up to the first dot of the base name
// ("train/0001.seg.png" has key "train/0001" and extension "seg.png"). Consecutive
// files with one key form a sample, as in webdataset and DALI's readers.webdataset.
// Scan understands the header dialects Python's tarfile, GNU tar and webdataset's
// TarWriter produce: ustar (with its 155-byte name prefix), GNU long names ('L'
// entries) and base-256 sizes, and pax extended headers ('x') carrying path and
// size. Directories, links and other non-regular entries are skipped, as are files
// whose base name has no dot (webdataset skips them too) or starts with one.
//
// The index format is DALI's wds2idx format, version v1.2: a first line
// "v1.2 <number of samples>", then one line per sample listing its components as
// "<ext> <data offset> <size> <file name>" separated by single spaces. Version v1.1
// lines (no file name) are read as well. Offsets are those of the file data, a
// multiple of the 512-byte tar block.
//
// Everything works over an io.ReaderAt plus the archive's size, so that an index
// can be built or checked through range reads, and over a byte slice through
// bytes.NewReader.
package tar
