// Package codec decodes encoded images (JPEG, PNG, BMP, TIFF, WebP, PNM, GIF) into
// interleaved 8-bit HWC pixels on the CPU. It is the decoding layer behind the engine's
// decoders.image and decoders.image_random_crop operators.
//
// JPEG goes through libjpeg-turbo (cgo, the shared libjpeg) with the settings PIL uses
// (accurate integer IDCT, fancy upsampling), so pixels match PIL's to within one unit.
// On top of PIL it can decode just a region of interest (whole iMCU columns are cropped
// with jpeg_crop_scanline, rows above are skipped with jpeg_skip_scanlines, decoding stops
// after the last needed row) and scale it down in the DCT domain by N/8 when the caller
// says how small the result may be. The other formats use Go decoders (the standard
// library and golang.org/x/image) or small parsers here (BMP, PNM), converted to RGB the
// way PIL's convert("RGB") does.
//
// The format is found from the content, never from a file name. EXIF orientation (JPEG
// APP1, WebP EXIF chunk, PNG eXIf chunk, TIFF IFD0) is applied when asked, and a region
// of interest is given in the coordinates of the upright image.
//
// Use: one Decoder per worker goroutine; Probe reads the header, OutputSize says how large
// the destination must be, Decode fills it. For JPEG, steady-state decoding allocates
// nothing: the libjpeg decompress object and scratch rows are reused.
//
//	d := codec.NewDecoder()
//	defer d.Close()
//	info, err := d.Probe(data)
//	opt := codec.Options{Out: codec.RGB, AdjustOrientation: true, MaxPixels: 178956970}
//	w, h, c, err := d.OutputSize(data, info, opt)
//	_, _, _, err = d.Decode(data, info, opt, dst[:w*h*c])
//
// Pixels match PIL 9.4 (Image.open + ImageOps.exif_transpose + convert) exactly on the
// test corpus, lossy WebP included. Known differences: 16-bit grayscale (PNG, TIFF) keeps
// the high byte where PIL clips the 16-bit value to 255; CMYK TIFF is not supported
// (golang.org/x/image/tiff lacks it); a TIFF orientation tag is applied once, as PIL's
// plain load does (its exif_transpose applies it a second time); BMP RLE delta escapes
// follow the BMP specification where PIL 9.4 misreads them; a GIF pixel index beyond the
// colour table is an error; PNG and WebP orientation come from EXIF only, not XMP; a JPEG
// with more than 1000 scans is refused as a decompression bomb.
package codec
