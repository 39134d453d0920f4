/*
 * nvcuvid_api.h: the part of NVIDIA's video decoding API (NVDEC: the driver's
 * libnvcuvid.so.1) that godali uses, declared from its public documentation: the types
 * and structure layouts only (godali opens the library with dlopen, and the GPU
 * emulator's stand-in, tests/gpuemu/nvcuvid_emu.c, implements the same functions).
 * Reserved fields are kept so that every structure has the documented size and offsets;
 * fields godali does not use are folded into them.
 */
#ifndef GODALI_NVCUVID_API_H
#define GODALI_NVCUVID_API_H

#include <stdint.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void *CUvideodecoder;
typedef void *CUvideoparser;
typedef struct _CUcontextlock_st *CUvideoctxlock;
typedef long long CUvideotimestamp;

/* Codecs (cudaVideoCodec). */
enum {
	GDNV_CODEC_MPEG1 = 0,
	GDNV_CODEC_MPEG2 = 1,
	GDNV_CODEC_MPEG4 = 2,
	GDNV_CODEC_VC1 = 3,
	GDNV_CODEC_H264 = 4,
	GDNV_CODEC_JPEG = 5,
	GDNV_CODEC_HEVC = 8,
	GDNV_CODEC_VP8 = 9,
	GDNV_CODEC_VP9 = 10,
	GDNV_CODEC_AV1 = 11,
};

/* Chroma formats (cudaVideoChromaFormat), output surface formats
 * (cudaVideoSurfaceFormat), deinterlacing (cudaVideoDeinterlaceMode). */
enum { GDNV_CHROMA_MONO = 0, GDNV_CHROMA_420 = 1, GDNV_CHROMA_422 = 2, GDNV_CHROMA_444 = 3 };
enum { GDNV_SURFACE_NV12 = 0, GDNV_SURFACE_P016 = 1 };
enum { GDNV_DEINTERLACE_WEAVE = 0 };

/* Packet flags (CUvideopacketflags). */
enum {
	GDNV_PKT_ENDOFSTREAM = 0x01,
	GDNV_PKT_TIMESTAMP = 0x02,
	GDNV_PKT_DISCONTINUITY = 0x04,
	GDNV_PKT_ENDOFPICTURE = 0x08,
};

/* CUVIDEOFORMAT: what the parser found in a sequence header. */
typedef struct {
	int codec;
	struct {
		unsigned int numerator, denominator;
	} frame_rate;
	unsigned char progressive_sequence;
	unsigned char bit_depth_luma_minus8;
	unsigned char bit_depth_chroma_minus8;
	unsigned char min_num_decode_surfaces;
	unsigned int coded_width;
	unsigned int coded_height;
	struct {
		int left, top, right, bottom;
	} display_area;
	int chroma_format;
	unsigned int bitrate;
	struct {
		int x, y;
	} display_aspect_ratio;
	struct {
		unsigned char format_bits; /* video_format:3, video_full_range_flag:1, reserved:4 */
		unsigned char color_primaries;
		unsigned char transfer_characteristics;
		unsigned char matrix_coefficients;
	} video_signal_description;
	unsigned int seqhdr_data_length;
} gdnv_video_format;

/* CUVIDPICPARAMS: a picture to decode. godali passes it from the parser to the decoder
 * untouched; only the leading fields are named. */
typedef struct {
	int PicWidthInMbs;
	int FrameHeightInMbs;
	int CurrPicIdx;
	int field_pic_flag;
	int bottom_field_flag;
	int second_field;
	unsigned int nBitstreamDataLen;
	const unsigned char *pBitstreamData;
	unsigned int nNumSlices;
	const unsigned int *pSliceDataOffsets;
	int ref_pic_flag;
	int intra_pic_flag;
	unsigned int Reserved[30];
	unsigned int CodecSpecific[1024];
} gdnv_pic_params;

/* CUVIDPARSERDISPINFO: a picture ready for display, in display order. */
typedef struct {
	int picture_index;
	int progressive_frame;
	int top_field_first;
	int repeat_first_field;
	CUvideotimestamp timestamp;
} gdnv_disp_info;

typedef int (*gdnv_sequence_cb)(void *, gdnv_video_format *);
typedef int (*gdnv_decode_cb)(void *, gdnv_pic_params *);
typedef int (*gdnv_display_cb)(void *, gdnv_disp_info *);

/* CUVIDPARSERPARAMS. */
typedef struct {
	int CodecType;
	unsigned int ulMaxNumDecodeSurfaces;
	unsigned int ulClockRate;
	unsigned int ulErrorThreshold;
	unsigned int ulMaxDisplayDelay;
	unsigned int uReserved1[5];
	void *pUserData;
	gdnv_sequence_cb pfnSequenceCallback;
	gdnv_decode_cb pfnDecodePicture;
	gdnv_display_cb pfnDisplayPicture;
	void *pvReserved2[7];
	void *pExtVideoInfo;
} gdnv_parser_params;

/* CUVIDSOURCEDATAPACKET. */
typedef struct {
	unsigned long flags;
	unsigned long payload_size;
	const unsigned char *payload;
	CUvideotimestamp timestamp;
} gdnv_packet;

/* CUVIDDECODECREATEINFO. */
typedef struct {
	unsigned long ulWidth;
	unsigned long ulHeight;
	unsigned long ulNumDecodeSurfaces;
	int CodecType;
	int ChromaFormat;
	unsigned long ulCreationFlags;
	unsigned long bitDepthMinus8;
	unsigned long ulIntraDecodeOnly;
	unsigned long ulMaxWidth;
	unsigned long ulMaxHeight;
	unsigned long Reserved1;
	struct {
		short left, top, right, bottom;
	} display_area;
	int OutputFormat;
	int DeinterlaceMode;
	unsigned long ulTargetWidth;
	unsigned long ulTargetHeight;
	unsigned long ulNumOutputSurfaces;
	CUvideoctxlock vidLock;
	struct {
		short left, top, right, bottom;
	} target_rect;
	unsigned long enableHistogram;
	unsigned long Reserved2[4];
} gdnv_create_info;

/* CUVIDPROCPARAMS: how to map (post-process) a decoded picture. */
typedef struct {
	int progressive_frame;
	int second_field;
	int top_field_first;
	int unpaired_field;
	unsigned int reserved_flags;
	unsigned int reserved_zero;
	unsigned long long raw_input_dptr;
	unsigned int raw_input_pitch;
	unsigned int raw_input_format;
	unsigned long long raw_output_dptr;
	unsigned int raw_output_pitch;
	unsigned int Reserved1;
	CUstream output_stream;
	unsigned int Reserved[46];
	unsigned long long *histogram_dptr;
	void *Reserved2[1];
} gdnv_proc_params;

/* The library's functions (all return a CUresult). */
#define GDNV_FUNCS(X)                                                                       \
	X(cuvidCreateVideoParser, (CUvideoparser * parser, gdnv_parser_params * params))        \
	X(cuvidParseVideoData, (CUvideoparser parser, gdnv_packet * packet))                    \
	X(cuvidDestroyVideoParser, (CUvideoparser parser))                                      \
	X(cuvidCreateDecoder, (CUvideodecoder * dec, gdnv_create_info * info))                  \
	X(cuvidDestroyDecoder, (CUvideodecoder dec))                                            \
	X(cuvidDecodePicture, (CUvideodecoder dec, gdnv_pic_params * pic))                      \
	X(cuvidMapVideoFrame64, (CUvideodecoder dec, int pic, unsigned long long *dev,          \
	                         unsigned int *pitch, gdnv_proc_params *proc))                  \
	X(cuvidUnmapVideoFrame64, (CUvideodecoder dec, unsigned long long dev))

#ifdef __cplusplus
}
#endif

#endif
