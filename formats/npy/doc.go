// Package npy parses the header of NumPy .npy files and rearranges their data,
// without the engine.
//
// A .npy file is the magic "\x93NUMPY", a major and minor version byte, the header
// length (uint16 little-endian in version 1.0, uint32 in 2.0 and 3.0), and the
// header: a Python dict literal with 'descr' (the dtype, e.g. '<f4'), 'fortran_order'
// and 'shape', padded with spaces and a newline. The data follows, C or Fortran
// ordered. Version 3.0 differs from 2.0 only in allowing UTF-8 in the header.
//
// Supported dtypes are the plain numeric ones with their byte order: b1, u1, i1,
// u2, i2, u4, i4, u8, i8, f2, f4, f8 ('<' little, '>' big, '|' not applicable, '='
// native, taken as little-endian). Structured, string and object dtypes are refused.
// The header is bounded by MaxHeaderSize and the data size implied by the shape is
// checked against the file size before anything else is read.
package npy
