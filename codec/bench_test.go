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

// BenchmarkDecodeValWindow: the validation pipeline's window (resize shorter to 256,
// centre crop 224, plus the filter's reach) decoded in place (Embed), against the whole
// image and against the entropy decoding alone (only the last row is wanted, so every
// MCU is entropy-decoded and skipped): what a window can save is the difference
// between the last two.
func BenchmarkDecodeValWindow(b *testing.B) {
	for _, f := range benchFiles {
		for _, c := range []struct {
			name string
			roi  func(w, h int) Rect
		}{
			{"full", func(w, h int) Rect { return Rect{} }},
			{"val_window", func(w, h int) Rect {
				s := float64(min(w, h)) / 256
				cw, ch := min(int(224*s)+4, w), min(int(224*s)+4, h)
				return Rect{(w - cw) / 2, (h - ch) / 2, cw, ch}
			}},
			{"entropy_only", func(w, h int) Rect { return Rect{0, h - 1, w, 1} }},
		} {
			b.Run(filepath.Base(f)+"/"+c.name, func(b *testing.B) {
				benchDecode(b, f, func(info Info) Options {
					w, h := info.OrientedSize(true)
					return Options{Out: RGB, AdjustOrientation: true, ROI: c.roi(w, h), Embed: true}
				})
			})
		}
	}
}

// BenchmarkDecodeProgressiveROI: a progressive JPEG, whole against the random-crop style
// window of BenchmarkDecodeROI (decoded with the columns block smoothing needs beside it,
// bit-exact with the whole decode): what the window saves over decoding whole and
// copying it out.
func BenchmarkDecodeProgressiveROI(b *testing.B) {
	for _, f := range []string{"pillow/icc_profile_big.jpg", "pillow/app13-multiple.jpg", "../sampling/prog_smooth420_211x157.jpg"} {
		for _, roi := range []bool{false, true} {
			name := filepath.Base(f) + "/full"
			if roi {
				name = filepath.Base(f) + "/roi"
			}
			b.Run(name, func(b *testing.B) {
				benchDecode(b, f, func(info Info) Options {
					opt := Options{Out: RGB, AdjustOrientation: true}
					if w, h := info.OrientedSize(true); roi {
						opt.ROI = Rect{w / 8, h / 6, w * 3 / 4, h * 2 / 3}
					}
					return opt
				})
			})
		}
	}
}
