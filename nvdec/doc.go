// Package nvdec decodes video on the GPU's hardware decoder (NVDEC) through the driver's
// libnvcuvid.so.1, opened with dlopen at first use (GODALI_NVCUVID_LIBRARY names another
// path: the GPU emulator's stand-in in tests), so that nothing links against it and the
// CPU flavour never loads it. Everything but this comment is behind the cuda build tag.
//
// The demuxing is package video's (FFmpeg): packets in Annex B form for H.264 and HEVC
// (video.File.AnnexB), as NVDEC's parser reads them, with their presentation times. The
// parser's callbacks run in C (nvcuvid_api.h declares the API from NVIDIA's public
// documentation): the sequence callback creates the decoder for the stream's size
// (8-bit 4:2:0 only; other formats are refused by name), the decode callback hands each
// picture to the hardware, the display callback queues the pictures in display order.
// After each packet, Go maps the queued pictures that are wanted, converts their NV12
// surface to packed RGB with kernels' godali_nv12_rgb on the caller's stream into the
// caller's device memory, waits for that stream and unmaps (a mapped surface may be
// reused by the decoder once unmapped). The colour matrix is the stream's (BT.601
// unless it says otherwise, as FFmpeg assumes), limited or full range.
//
// A read seeks to the key frame before its first frame (flushing the parser first) and
// decodes from there, so that frames are numbered by presentation time exactly as the
// CPU path numbers them (video.Index).
package nvdec
