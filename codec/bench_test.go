package codec

import (
	"path/filepath"
	"testing"
)

// benchFiles: a typical ImageNet-sized photo and a larger one.
var benchFiles = []string{"pillow/flower.jpg", "pillow/junk_jpeg_header.jpg"}

// BenchmarkDecodeFull: whole image to RGB, as decoders.image does.
func BenchmarkDecodeFull(b *testing.B) {
	for _, f := range benchFiles {
		b.Run(filepath.Base(f), func(b *testing.B) {
			benchDecode(b, f, func(Info) Options { return Options{Out: RGB, AdjustOrientation: true} })
		})
	}
}

// BenchmarkDecodeROIScaled: a random-resized-crop style window (about half the area)
// for a 224x224 output, as decoders.image_random_crop fused with resize does.
func BenchmarkDecodeROIScaled(b *testing.B) {
	for _, f := range benchFiles {
		b.Run(filepath.Base(f), func(b *testing.B) {
			benchDecode(b, f, func(info Info) Options {
				w, h := info.OrientedSize(true)
				return Options{Out: RGB, AdjustOrientation: true, ROI: Rect{w / 8, h / 6, w * 3 / 4, h * 2 / 3}, MinWidth: 224, MinHeight: 224}
			})
		})
	}
}

// BenchmarkDecodeROI: the same window without DCT scaling.
func BenchmarkDecodeROI(b *testing.B) {
	for _, f := range benchFiles {
		b.Run(filepath.Base(f), func(b *testing.B) {
			benchDecode(b, f, func(info Info) Options {
				w, h := info.OrientedSize(true)
				return Options{Out: RGB, AdjustOrientation: true, ROI: Rect{w / 8, h / 6, w * 3 / 4, h * 2 / 3}}
			})
		})
	}
}

func benchDecode(b *testing.B, file string, options func(Info) Options) {
	data := readFile(b, filepath.Join(corpusDir, file))
	d := NewDecoder()
	defer d.Close()
	info, err := d.Probe(data)
	if err != nil {
		b.Fatal(err)
	}
	opt := options(info)
	w, h, c, err := d.OutputSize(data, info, opt)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, w*h*c)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		info, err := d.Probe(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := d.Decode(data, info, opt, dst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w*h), "outpixels")
}
