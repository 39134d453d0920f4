package imaging

import (
	"fmt"
	"testing"
	"unsafe"
)

// The benchmarks follow the ResNet-50 pipeline: a decoded random crop of about
// 500x375 resized to 224x224 (INTERP_TRIANGULAR), then normalised to float CHW. Plans
// are rebuilt on every iteration because every sample has its own crop.

var imagenetNorm = NormalizeParams{
	Mean:  []float32{0.485 * 255, 0.456 * 255, 0.406 * 255},
	Std:   []float32{0.229 * 255, 0.224 * 255, 0.225 * 255},
	Scale: 1, CHW: true, CropW: 224, CropH: 224,
}

func BenchmarkResizePlan_500x375_to_224(b *testing.B) {
	var s Scratch
	for b.Loop() {
		NewResizePlan(500, 375, FullROI(500, 375), 224, 224, InterpTriangular, true, &s)
	}
}

func BenchmarkResize_500x375_to_224(b *testing.B) {
	src := testImage(500, 375, 3, 1)
	dst := make([]byte, 224*224*3)
	var s Scratch
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		p := NewResizePlan(500, 375, FullROI(500, 375), 224, 224, InterpTriangular, true, &s)
		if err := p.Resize(dst, src, 3, &s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResizeCMN_500x375_to_224_CHWFloat(b *testing.B) {
	src := testImage(500, 375, 3, 1)
	np := imagenetNorm
	dst := make([]byte, np.OutBytes(3))
	var s Scratch
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		np.Mirror = !np.Mirror // coin_flip
		p := NewResizePlan(500, 375, FullROI(500, 375), 224, 224, InterpTriangular, true, &s)
		if err := ResizeCropMirrorNormalize(dst, src, 500, 375, 3, p, &np, &s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResizeCMN_500x375_to_256_crop224_CHWFloat is the validation pipeline:
// resize the shorter side to 256, centre crop 224.
func BenchmarkResizeCMN_500x375_to_256_crop224_CHWFloat(b *testing.B) {
	src := testImage(500, 375, 3, 1)
	np := imagenetNorm
	np.CropX, np.CropY = (341-224)/2, (256-224)/2
	dst := make([]byte, np.OutBytes(3))
	var s Scratch
	for b.Loop() {
		p := NewResizePlan(500, 375, FullROI(500, 375), 341, 256, InterpTriangular, true, &s)
		if err := ResizeCropMirrorNormalize(dst, src, 500, 375, 3, p, &np, &s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResizeCMN_500x375_to_224_CHWHalf(b *testing.B) {
	src := testImage(500, 375, 3, 1)
	np := imagenetNorm
	np.Out = Float16
	dst := make([]byte, np.OutBytes(3))
	var s Scratch
	for b.Loop() {
		p := NewResizePlan(500, 375, FullROI(500, 375), 224, 224, InterpTriangular, true, &s)
		if err := ResizeCropMirrorNormalize(dst, src, 500, 375, 3, p, &np, &s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCMN_224(b *testing.B) {
	src := testImage(224, 224, 3, 1)
	np := imagenetNorm
	dst := make([]byte, np.OutBytes(3))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if err := CropMirrorNormalize(dst, src, 224, 224, 3, &np); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCMN_224_HWCFloat(b *testing.B) {
	src := testImage(224, 224, 3, 1)
	np := imagenetNorm
	np.CHW = false
	dst := make([]byte, np.OutBytes(3))
	for b.Loop() {
		if err := CropMirrorNormalize(dst, src, 224, 224, 3, &np); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHPass3 times the horizontal pass of one 3-channel row into the ring's uint32
// elements, 224 outputs from the row widths of the training pipeline's crops: upscaling
// (2 taps) and downscaling by up to about 2x (3 to 5 taps), and 4x (8 taps).
func BenchmarkHPass3(b *testing.B) {
	for _, inW := range []int{150, 300, 400, 440, 880} {
		p := NewResizePlan(inW, 1, FullROI(inW, 1), 224, 1, InterpTriangular, true, nil)
		b.Run(fmt.Sprintf("%dpx_k=%d", inW, p.h.fixed), func(b *testing.B) {
			src := testImage(inW, 1, 3, 1)
			out := make([]uint32, 3*224)
			for b.Loop() {
				hpass(out, src, &p.h, 0, 224, 3)
			}
		})
	}
}

// BenchmarkVFilt times the vertical pass of one output row from the ring (224 RGB
// pixels, 672 uint32 elements per row) for the training pipeline's tap counts.
func BenchmarkVFilt(b *testing.B) {
	for _, k := range []int{2, 3, 4, 5, 8} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			rows := make([]unsafe.Pointer, k)
			w := make([]int32, k)
			for i := range rows {
				r := make([]uint32, 672)
				for j := range r {
					r[j] = uint32((i*31 + j*7) % 256)
				}
				rows[i] = unsafe.Pointer(&r[0])
				w[i] = fixedOne / int32(k)
			}
			out := make([]byte, 672)
			for b.Loop() {
				vfiltVec(out, rows, w)
			}
		})
	}
}
