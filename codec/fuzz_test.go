package codec

import (
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes through Probe, OutputSize and Decode (full, and an
// oriented, scaled ROI). Nothing may panic; a successful full decode implies the ROI
// decode succeeds too and, unscaled, equals the same window of the full image.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"pillow/hopper.jpg", "pillow/hopper_orientation_6.jpg", "pillow/hopper_gray.jpg",
		"libjpeg-turbo/testimgari.jpg", "libjpeg-turbo/testimgint.jpg", "pillow/pil_sample_cmyk.jpg",
		"pillow/hopper.png", "pillow/hopper.gif", "pillow/hopper.webp", "pillow/hopper_rle8.bmp",
		"pillow/orientation_rectangle.jpg", "pillow/truncated_jpeg.jpg",
	} {
		f.Add(readFile(f, filepath.Join(corpusDir, s)))
	}
	f.Add([]byte("P5 3 2 255\n\x00\x01\x02\x03\x04\x05"))
	f.Add([]byte("P6\n# comment\n1 1\n255\n\xff\x00\x7f"))
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x02})
	d := NewDecoder()
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := d.Probe(data)
		if err != nil {
			return
		}
		opt := Options{Out: RGB, AdjustOrientation: true, MaxPixels: 1 << 20}
		w, h, c, err := d.OutputSize(data, info, opt)
		if err != nil {
			return
		}
		full := make([]byte, w*h*c)
		if _, _, _, err := d.Decode(data, info, opt, full); err != nil {
			return
		}
		roi := Rect{w / 4, h / 3, max(1, w/2), max(1, h/2)}
		for _, scaled := range []bool{false, true} {
			o := opt
			o.ROI = roi
			if scaled {
				o.MinWidth, o.MinHeight = max(1, roi.W/3), max(1, roi.H/3)
			}
			rw, rh, rc, err := d.OutputSize(data, info, o)
			if err != nil {
				t.Fatalf("ROI %+v of a %dx%d image: %v", roi, w, h, err)
			}
			pix := make([]byte, rw*rh*rc)
			if _, _, _, err := d.Decode(data, info, o, pix); err != nil {
				t.Fatalf("full decode works, ROI %+v (scaled %v) fails: %v", roi, scaled, err)
			}
			if !scaled {
				if s := compare(pix, window(full, w, c, roi)); s.max != 0 {
					t.Fatalf("ROI %+v differs from the full decode by up to %d", roi, s.max)
				}
			}
		}
	})
}
