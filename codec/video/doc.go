// Package video decodes video files on the CPU with FFmpeg's libraries (libavformat,
// libavcodec, libavutil, libswscale), which it opens with dlopen at first use rather than
// linking them: a library built with it loads on hosts without FFmpeg, and Load's error
// (at the build of a pipeline that has a video operator) says what is missing and how
// to get it (Hint). Building needs FFmpeg's headers; the loaded libraries must have the
// headers' major versions (FFmpeg 5.1: libavcodec.so.59, libavformat.so.59,
// libavutil.so.57, libswscale.so.6, as Debian 12 and PyAV 10.0.0's wheels ship), because
// the structures' layouts change between majors. GODALI_FFMPEG_LIBDIR names a directory
// to load them from (PyAV's av.libs, whose file names carry a hash, is recognised).
//
// A File is one open video. Scan reads its packets without decoding them and returns
// the Index: every frame's presentation time in order and the key frames. Frames are
// numbered by their rank in presentation order, so B-frames and variable frame rates
// need no frame-rate arithmetic. ReadFrames decodes a sequence (first, count, stride)
// into packed RGB24: it seeks to the key frame at or before the first frame (retrying
// an earlier key frame when the demuxer lands late), or goes on decoding when the
// previous call ended between that key frame and the first frame. Of the frames it does
// not deliver (before the first, and between the frames of a stride), the decoder skips
// the H.264 and HEVC non-reference pictures (nothing refers to them), and none is
// converted. Conversion to RGB is
// swscale's, with the frame's colour matrix and range as FFmpeg's scale filter reads
// them, so frames equal `ffmpeg -sws_flags bilinear -pix_fmt rgb24` output exactly.
// Rotation metadata is reported in Info.Rotation, not applied (as PyAV and DALI).
//
// The decoder runs single-threaded by default (threads=1): pipeline workers decode
// different samples in parallel. Steady-state reading allocates nothing on the Go
// heap; FFmpeg's decoder reuses its own frame pool, and frames are converted straight
// into the caller's buffer. cgo lives here only (gdvideo.c). Load sets FFmpeg's log level
// to fatal, process-wide (errors come back as codes; FFmpeg would print to the host's
// stderr), which also quiets another user of the same libraries in the process (PyAV).
package video
