// Package nvjpeg binds NVIDIA's nvJPEG library, loaded at run time, and decides which
// decoder each JPEG goes to.
//
// The library is opened with dlopen (GODALI_NVJPEG_LIBRARY if set, otherwise
// libnvjpeg.so.13, .12, .11) and called through function pointers resolved once with
// dlsym and small C trampolines, so one build of libgodali_cuda.so runs with whichever
// CUDA the host has and nothing links against libnvjpeg. nvjpeg.h is used for types and
// constants only; calls that a given version lacks report ErrUnavailable.
//
// Routing (route.go, plain Go, tested without a GPU): ParseJPEG reads a stream's
// headers; Route sends baseline Huffman 8-bit YCbCr/gray single-scan images in 4:4:4,
// 4:2:2, 4:2:0, 4:4:0 to the hardware decoder (the JPEG engines of A100, H100, H200),
// other 8-bit Huffman YCbCr/gray images (progressive, 4:1:1, multi-scan) to the CUDA
// hybrid decoder, and the rest (arithmetic coding, 12-bit, lossless, CMYK/YCCK, Adobe
// RGB, EXIF-rotated images) to libjpeg-turbo on the CPU threads. SplitHardware shares a
// batch's hardware-eligible images between the hardware and CUDA decoders like DALI's
// hw_decoder_load.
//
// Decoding (cuda build tag): a Handle on the hardware backend decodes batches with
// nvjpegDecodeBatched (nvjpegDecodeBatchedEx with per-image ROIs); a StreamDecoder runs
// the decoupled API (parse, DecodeJpegHost on a CPU thread, TransferToDevice and
// DecodeJpegDevice on a stream) for the hybrid backends. Output is interleaved RGB
// (NVJPEG_OUTPUT_RGBI) in device buffers the caller owns.
//
// Memory handed to nvJPEG: encoded streams given to BatchDecoder.Decode must not live
// in Go memory (use pinned pool blocks or the host pool's mmap'd leases), because nvJPEG
// receives an array of pointers to them. StreamDecoder.Parse copies the stream and takes
// any []byte. nvJPEG's own scratch buffers come from cudaMalloc/cudaHostAlloc; they grow
// to the largest image during warm-up and are then reused (set the padding with
// Handle.SetPadding, DALI's device_memory_padding/host_memory_padding).
package nvjpeg
