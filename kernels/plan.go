package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/godali/godali/imaging"
)

// precisionBits matches GODALI_PRECISION_BITS and imaging's FixedOne.
const (
	precisionBits = 22
	maxDim        = 1 << 24
	maxChannels   = 64
)

// The kernels shift by precisionBits; the weights come from imaging.
var _ = [1]struct{}{}[imaging.FixedOne-(1<<precisionBits)]

// Tap is one output's filter: Weights[Off:Off+N] applied to source indices Start.. .
type Tap struct{ Start, N, Off int32 }

// ResizeSample describes one resize of a uint8 HWC image.
type ResizeSample struct {
	Src       uintptr // device address of the source
	SrcW      int
	SrcH      int
	SrcStride int // bytes per source row; 0 means SrcW * Channels
	Channels  int
	Dst       uintptr // device address of the output, DstW * DstH * Channels bytes, dense
	DstW      int
	DstH      int
	// ROI is the source window {x0, y0, x1, y1} in pixel-edge coordinates; x1 < x0 or
	// y1 < y0 flips the axis. The zero ROI is the whole image. Random resized crop is a
	// resize whose ROI is the crop window.
	ROI       [4]float64
	Interp    imaging.Interp
	Antialias bool
}

// resizeDesc is godali_resize_desc.
type resizeDesc struct {
	Src, Dst, Tmp         uint64
	SrcW, SrcH, SrcStride int32
	DstW, DstH            int32
	Channels              int32
	Row0, Row1            int32
	HTaps, VTaps          int32
}

// ResizeBatch is the plan of a batch of resizes: descriptors and filter tables, built on
// the host and uploaded in one copy. Its slices are reused: after warm-up, planning a
// batch does not allocate. Not safe for concurrent use.
type ResizeBatch struct {
	descs    []resizeDesc
	tmpOff   []int
	taps     []Tap
	weights  []int32
	axis     imaging.AxisTaps
	tmpBytes int
	maxW     int // widest output
	maxH     int // tallest output
	maxRows  int // most intermediate rows
}

// Reset empties the batch, keeping its memory.
func (b *ResizeBatch) Reset() {
	b.descs, b.tmpOff, b.taps, b.weights = b.descs[:0], b.tmpOff[:0], b.taps[:0], b.weights[:0]
	b.tmpBytes, b.maxW, b.maxH, b.maxRows = 0, 0, 0, 0
}

// Len is the number of samples.
func (b *ResizeBatch) Len() int { return len(b.descs) }

// TmpBytes is the size of the intermediate buffer the horizontal pass writes.
func (b *ResizeBatch) TmpBytes() int { return b.tmpBytes }

// FullROI is the ROI covering a whole w x h image.
func FullROI(w, h int) [4]float64 { return imaging.FullROI(w, h) }

// CropROI is the ROI of random resized crop's window of w x h pixels at (x, y).
func CropROI(x, y, w, h int) [4]float64 {
	return [4]float64{float64(x), float64(y), float64(x + w), float64(y + h)}
}

// Add plans one sample: the same weights as imaging's ResizePlan for the same
// arguments.
func (b *ResizeBatch) Add(s *ResizeSample) error {
	if s.Interp < imaging.InterpNN || s.Interp > imaging.InterpTriangular {
		return fmt.Errorf("resize: interp_type %d: expected %v..%v", int(s.Interp), imaging.InterpNN, imaging.InterpTriangular)
	}
	if s.SrcW < 1 || s.SrcH < 1 || s.SrcW > maxDim || s.SrcH > maxDim {
		return fmt.Errorf("resize: source size %dx%d: expected 1..%d per side", s.SrcW, s.SrcH, maxDim)
	}
	if s.DstW < 1 || s.DstH < 1 || s.DstW > maxDim || s.DstH > maxDim {
		return fmt.Errorf("resize: output size %dx%d: expected 1..%d per side", s.DstW, s.DstH, maxDim)
	}
	if s.Channels < 1 || s.Channels > maxChannels {
		return fmt.Errorf("resize: %d channels: expected 1..%d", s.Channels, maxChannels)
	}
	stride := s.SrcStride
	if stride == 0 {
		stride = s.SrcW * s.Channels
	}
	if stride < s.SrcW*s.Channels || stride > math.MaxInt32 {
		return fmt.Errorf("resize: source stride %d: expected at least %d bytes", stride, s.SrcW*s.Channels)
	}
	roi := s.ROI
	if roi == ([4]float64{}) {
		roi = FullROI(s.SrcW, s.SrcH)
	}
	for _, v := range roi {
		if math.IsNaN(v) || math.Abs(v) > maxDim {
			return fmt.Errorf("resize: roi %v: expected finite coordinates within +-%d", roi, maxDim)
		}
	}
	// Coordinates at float32 precision, as PIL and the CPU operator take them.
	for i, v := range roi {
		roi[i] = float64(float32(v))
	}
	d := resizeDesc{Src: uint64(s.Src), Dst: uint64(s.Dst), SrcW: int32(s.SrcW), SrcH: int32(s.SrcH),
		SrcStride: int32(stride), DstW: int32(s.DstW), DstH: int32(s.DstH), Channels: int32(s.Channels)}
	d.HTaps = int32(len(b.taps))
	b.appendAxis(s.SrcW, roi[0], roi[2], s.DstW, s.Interp, s.Antialias)
	d.VTaps = int32(len(b.taps))
	b.appendAxis(s.SrcH, roi[1], roi[3], s.DstH, s.Interp, s.Antialias)
	d.Row0, d.Row1 = math.MaxInt32, 0
	for _, t := range b.taps[d.VTaps:] {
		d.Row0 = min(d.Row0, t.Start)
		d.Row1 = max(d.Row1, t.Start+t.N)
	}
	off := (b.tmpBytes + 15) &^ 15
	b.tmpBytes = off + int(d.Row1-d.Row0)*s.DstW*s.Channels
	b.tmpOff = append(b.tmpOff, off)
	b.descs = append(b.descs, d)
	b.maxW, b.maxH, b.maxRows = max(b.maxW, s.DstW), max(b.maxH, s.DstH), max(b.maxRows, int(d.Row1-d.Row0))
	return nil
}

// appendAxis appends one tap per output sample along an axis, with imaging's own
// weights (PIL's coefficients), so that the GPU resamples exactly like the CPU operator.
func (b *ResizeBatch) appendAxis(inSize int, in0, in1 float64, outSize int, interp imaging.Interp, antialias bool) {
	b.axis.Each(inSize, in0, in1, outSize, interp, antialias, func(start int32, w []int32) {
		b.taps = append(b.taps, Tap{Start: start, N: int32(len(w)), Off: int32(len(b.weights))})
		b.weights = append(b.weights, w...)
	})
}

// resizeLayout is where the parts of a packed ResizeBatch lie in the upload buffer.
type resizeLayout struct{ descs, taps, weights, size int }

func (b *ResizeBatch) layout() resizeLayout {
	var l resizeLayout
	l.taps = align(len(b.descs) * int(unsafe.Sizeof(resizeDesc{})))
	l.weights = align(l.taps + 12*len(b.taps))
	l.size = align(l.weights + 4*len(b.weights))
	return l
}

// pack writes the plan into buf (at least layout().size bytes), with the horizontal
// pass's rows at device address tmp.
func (b *ResizeBatch) pack(buf []byte, tmp uintptr) resizeLayout {
	l := b.layout()
	for i := range b.descs {
		b.descs[i].Tmp = uint64(tmp) + uint64(b.tmpOff[i])
	}
	copy(buf[l.descs:], bytesOf(b.descs))
	copy(buf[l.taps:], bytesOf(b.taps))
	copy(buf[l.weights:], bytesOf(b.weights))
	return l
}

// CMNParams are crop_mirror_normalize's per-operator settings: out = (in - Mean[c]) /
// Std[c] * Scale + Shift, as in imaging.NormalizeParams.
type CMNParams struct {
	Mean, Std    []float32 // one value per channel, or one for all; empty: 0 and 1
	Scale, Shift float32   // Scale 1 for DALI's default
	Out          imaging.DType
	CHW          bool
	PadChannels  bool // pad the channels to the next power of two with zeros
}

// CMNSample is one sample of crop_mirror_normalize.
type CMNSample struct {
	Src    uintptr // uint8 HWC
	W, H   int
	Stride int // bytes per source row; 0 means W * channels
	Dst    uintptr
	CropX  int // the window, in source pixels; it may leave the image (zero padding)
	CropY  int
	CropW  int
	CropH  int
	Mirror bool
}

// cmnDesc is godali_cmn_desc.
type cmnDesc struct {
	Src, Dst, LUT                      uint64
	SrcW, SrcH, SrcStride, Channels    int32
	CropX, CropY, CropW, CropH         int32
	OutChannels, ElemSize, CHW, Mirror int32
}

// CMNBatch is the plan of a batch of crop_mirror_normalize samples sharing one operator's
// parameters and channel count.
type CMNBatch struct {
	descs      []cmnDesc
	lut        []byte
	channels   int
	outCh      int
	elem       int
	chw        bool
	maxW, maxH int
}

// Reset empties the batch and tabulates the normalisation of every uint8 value of each
// of the channels, exactly as the CPU operator does.
func (b *CMNBatch) Reset(p *CMNParams, channels int) error {
	b.descs = b.descs[:0]
	b.maxW, b.maxH = 0, 0
	if channels < 1 || channels > maxChannels {
		return fmt.Errorf("crop_mirror_normalize: %d channels: expected 1..%d", channels, maxChannels)
	}
	if p.Out.Size() == 0 {
		return fmt.Errorf("crop_mirror_normalize: dtype %v: expected FLOAT, FLOAT16, UINT8 or INT8", p.Out)
	}
	for _, l := range [][]float32{p.Mean, p.Std} {
		if len(l) > 1 && len(l) != channels {
			return fmt.Errorf("crop_mirror_normalize: mean/std have %d values: expected 1 or %d (one per channel)", len(l), channels)
		}
		for _, v := range l {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("crop_mirror_normalize: mean %v, std %v: expected finite values", p.Mean, p.Std)
			}
		}
	}
	for _, v := range p.Std {
		if v == 0 {
			return fmt.Errorf("crop_mirror_normalize: std %v: expected non-zero values", p.Std)
		}
	}
	b.channels, b.elem, b.chw = channels, p.Out.Size(), p.CHW
	b.outCh = channels
	if p.PadChannels {
		b.outCh = 1
		for b.outCh < channels {
			b.outCh *= 2
		}
	}
	n := channels * 256 * b.elem
	if cap(b.lut) < n {
		b.lut = make([]byte, n)
	}
	b.lut = b.lut[:n]
	for ch := 0; ch < channels; ch++ {
		mean, std := imaging.MeanStd(p.Mean, ch, 0), imaging.MeanStd(p.Std, ch, 1)
		for v := 0; v < 256; v++ {
			// The CPU operator's own values, stored little-endian for the GPU.
			bits := imaging.NormalizedBits(v, mean, std, float64(p.Scale), float64(p.Shift), p.Out)
			i := (ch*256 + v) * b.elem
			for k := 0; k < b.elem; k++ {
				b.lut[i+k] = byte(bits >> (8 * k))
			}
		}
	}
	return nil
}

// OutBytes is the output size of a sample with a cw x ch window.
func (b *CMNBatch) OutBytes(cw, ch int) int { return cw * ch * b.outCh * b.elem }

// Add plans one sample.
func (b *CMNBatch) Add(s *CMNSample) error {
	if b.elem == 0 {
		return fmt.Errorf("crop_mirror_normalize: Add before Reset")
	}
	stride, err := checkWindow("crop_mirror_normalize", s.W, s.H, b.channels, s.Stride, s.CropX, s.CropY, s.CropW, s.CropH)
	if err != nil {
		return err
	}
	if s.Dst%uintptr(b.elem) != 0 {
		return fmt.Errorf("crop_mirror_normalize: output address %#x is not aligned to %d bytes", s.Dst, b.elem)
	}
	d := cmnDesc{Src: uint64(s.Src), Dst: uint64(s.Dst), SrcW: int32(s.W), SrcH: int32(s.H), SrcStride: int32(stride),
		Channels: int32(b.channels), CropX: int32(s.CropX), CropY: int32(s.CropY), CropW: int32(s.CropW), CropH: int32(s.CropH),
		OutChannels: int32(b.outCh), ElemSize: int32(b.elem), CHW: boolInt(b.chw), Mirror: boolInt(s.Mirror)}
	b.descs = append(b.descs, d)
	b.maxW, b.maxH = max(b.maxW, s.CropW), max(b.maxH, s.CropH)
	return nil
}

// Len is the number of samples.
func (b *CMNBatch) Len() int { return len(b.descs) }

func (b *CMNBatch) layout() (lut, size int) {
	lut = align(len(b.descs) * int(unsafe.Sizeof(cmnDesc{})))
	return lut, align(lut + len(b.lut))
}

// pack writes descriptors and tables into buf, which will be uploaded to device address
// base.
func (b *CMNBatch) pack(buf []byte, base uintptr) {
	lut, _ := b.layout()
	for i := range b.descs {
		b.descs[i].LUT = uint64(base) + uint64(lut)
	}
	copy(buf, bytesOf(b.descs))
	copy(buf[lut:], b.lut)
}

// CropSample is one crop or flip of a uint8 HWC image.
type CropSample struct {
	Src      uintptr
	W, H     int
	Stride   int // 0 means W * Channels
	Channels int
	Dst      uintptr // CropW * CropH * Channels bytes
	X, Y     int     // window; it may leave the image, where Fill is written
	CropW    int
	CropH    int
	Fill     byte
	FlipH    bool // mirror horizontally
	FlipV    bool // upside down
}

// cropDesc is godali_crop_desc.
type cropDesc struct {
	Src, Dst                        uint64
	SrcW, SrcH, SrcStride, Channels int32
	X, Y, W, H                      int32
	Fill, FlipH, FlipV, Reserved    int32
}

// CropBatch is the plan of a batch of crops and flips.
type CropBatch struct {
	descs      []cropDesc
	maxW, maxH int
}

// Reset empties the batch.
func (b *CropBatch) Reset() { b.descs, b.maxW, b.maxH = b.descs[:0], 0, 0 }

// Len is the number of samples.
func (b *CropBatch) Len() int { return len(b.descs) }

// Add plans one sample.
func (b *CropBatch) Add(s *CropSample) error {
	if s.Channels < 1 || s.Channels > maxChannels {
		return fmt.Errorf("crop: %d channels: expected 1..%d", s.Channels, maxChannels)
	}
	stride, err := checkWindow("crop", s.W, s.H, s.Channels, s.Stride, s.X, s.Y, s.CropW, s.CropH)
	if err != nil {
		return err
	}
	b.descs = append(b.descs, cropDesc{Src: uint64(s.Src), Dst: uint64(s.Dst), SrcW: int32(s.W), SrcH: int32(s.H),
		SrcStride: int32(stride), Channels: int32(s.Channels), X: int32(s.X), Y: int32(s.Y), W: int32(s.CropW), H: int32(s.CropH),
		Fill: int32(s.Fill), FlipH: boolInt(s.FlipH), FlipV: boolInt(s.FlipV)})
	b.maxW, b.maxH = max(b.maxW, s.CropW), max(b.maxH, s.CropH)
	return nil
}

func (b *CropBatch) size() int { return align(len(b.descs) * int(unsafe.Sizeof(cropDesc{}))) }

func (b *CropBatch) pack(buf []byte) { copy(buf, bytesOf(b.descs)) }

// ColorSample is one sample of brightness_contrast, hsv or color_twist: a dense-output
// point-wise transform of a uint8 HWC image, computed like imaging's
// ColorMatrix.Apply (UseMatrix, 3 channels) or AffineTable (every channel value v becomes
// Scale*v + Offset).
type ColorSample struct {
	Src       uintptr
	W, H      int
	Stride    int // 0 means W * Channels
	Channels  int
	Dst       uintptr // W * H * Channels uint8, or float32 with Float
	Float     bool
	UseMatrix bool
	Matrix    imaging.ColorMatrix
	Scale     float32
	Offset    float32
}

// colorDesc is godali_color_desc.
type colorDesc struct {
	Src, Dst                  uint64
	W, H, SrcStride, Channels int32
	Matrix, OutFloat          int32
	M                         [9]float32
	Off                       [3]float32
}

// ColorBatch is the plan of a batch of color transforms.
type ColorBatch struct {
	descs      []colorDesc
	maxW, maxH int
}

// Reset empties the batch.
func (b *ColorBatch) Reset() { b.descs, b.maxW, b.maxH = b.descs[:0], 0, 0 }

// Len is the number of samples.
func (b *ColorBatch) Len() int { return len(b.descs) }

// Add plans one sample.
func (b *ColorBatch) Add(s *ColorSample) error {
	if s.Channels < 1 || s.Channels > maxChannels {
		return fmt.Errorf("color: %d channels: expected 1..%d", s.Channels, maxChannels)
	}
	if s.UseMatrix && s.Channels != 3 {
		return fmt.Errorf("color: a color matrix needs 3 channels, got %d", s.Channels)
	}
	stride, err := checkWindow("color", s.W, s.H, s.Channels, s.Stride, 0, 0, s.W, s.H)
	if err != nil {
		return err
	}
	if s.Float && s.Dst%4 != 0 {
		return fmt.Errorf("color: output address %#x is not aligned to 4 bytes", s.Dst)
	}
	d := colorDesc{Src: uint64(s.Src), Dst: uint64(s.Dst), W: int32(s.W), H: int32(s.H), SrcStride: int32(stride),
		Channels: int32(s.Channels), Matrix: boolInt(s.UseMatrix), OutFloat: boolInt(s.Float)}
	if s.UseMatrix {
		for i := 0; i < 3; i++ {
			copy(d.M[3*i:3*i+3], s.Matrix.M[i][:])
		}
		d.Off = s.Matrix.Off
	} else {
		d.M[0], d.Off[0] = s.Scale, s.Offset
	}
	b.descs = append(b.descs, d)
	b.maxW, b.maxH = max(b.maxW, s.W), max(b.maxH, s.H)
	return nil
}

func (b *ColorBatch) size() int { return align(len(b.descs) * int(unsafe.Sizeof(colorDesc{}))) }

func (b *ColorBatch) pack(buf []byte) { copy(buf, bytesOf(b.descs)) }

func boolInt(v bool) int32 {
	if v {
		return 1
	}
	return 0
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// align rounds n up to 16 bytes: every part of an upload starts suitably aligned.
func align(n int) int { return (n + 15) &^ 15 }

// bytesOf views a slice of plain-data structs as bytes (the host is little-endian, as
// are the GPUs).
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// checkWindow validates a w x h x c input (stride 0: packed rows) and a cw x ch window at
// (x, y), which may leave the image; it returns the row stride in bytes.
func checkWindow(op string, w, h, c, stride, x, y, cw, ch int) (int, error) {
	if w < 1 || h < 1 || w > maxDim || h > maxDim {
		return 0, fmt.Errorf("%s: input %dx%d: expected 1..%d per side", op, w, h, maxDim)
	}
	if cw < 1 || ch < 1 || cw > maxDim || ch > maxDim {
		return 0, fmt.Errorf("%s: window %dx%d: expected 1..%d per side", op, cw, ch, maxDim)
	}
	if abs(x) > maxDim || abs(y) > maxDim {
		return 0, fmt.Errorf("%s: window position (%d, %d): expected within +-%d", op, x, y, maxDim)
	}
	if stride == 0 {
		stride = w * c
	}
	if stride < w*c || stride > math.MaxInt32 {
		return 0, fmt.Errorf("%s: stride %d: expected at least %d bytes", op, stride, w*c)
	}
	return stride, nil
}

// SetDst sets the sample's output address (the plans of gpu operators fill it from the
// batch's outputs just before the launch).
func (s *ResizeSample) SetDst(p uintptr) { s.Dst = p }

// SetDst sets the sample's output address.
func (s *CMNSample) SetDst(p uintptr) { s.Dst = p }

// SetDst sets the sample's output address.
func (s *CropSample) SetDst(p uintptr) { s.Dst = p }

// SetDst sets the sample's output address.
func (s *ColorSample) SetDst(p uintptr) { s.Dst = p }
