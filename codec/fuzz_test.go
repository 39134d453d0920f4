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
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, d, data) })
}

// checkDecode is the property every fuzz target checks: Probe, OutputSize and Decode
// never panic, and when the full decode succeeds so do ROI decodes (plain and scaled),
// the plain one equal to the same window of the full image.
func checkDecode(t *testing.T, d *Decoder, data []byte) {
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
	// Gray and BGR outputs of the same image must decode too.
	for _, out := range []OutputType{Gray, BGR} {
		o := opt
		o.Out = out
		ow, oh, oc, err := d.OutputSize(data, info, o)
		if err != nil {
			t.Fatalf("%v output size: %v", out, err)
		}
		if _, _, _, err := d.Decode(data, info, o, make([]byte, ow*oh*oc)); err != nil {
			t.Fatalf("RGB decode works, %v fails: %v", out, err)
		}
	}
}

// fuzzFormat fuzzes one decoder: seeds are corpus files of that format, and inputs the
// content sniffing gives to another decoder are skipped, so the fuzzer stays on it.
func fuzzFormat(f *testing.F, format Format, seeds []string, extra ...[]byte) {
	for _, s := range seeds {
		f.Add(readFile(f, filepath.Join(corpusDir, s)))
	}
	for _, b := range extra {
		f.Add(b)
	}
	d := NewDecoder()
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		if DetectFormat(data) != format {
			return
		}
		checkDecode(t, d, data)
	})
}

func FuzzJPEG(f *testing.F) {
	fuzzFormat(f, FormatJPEG, []string{"pillow/hopper.jpg", "pillow/hopper_orientation_6.jpg",
		"pillow/hopper_gray.jpg", "libjpeg-turbo/testimgari.jpg", "pillow/pil_sample_cmyk.jpg",
		"pillow/truncated_jpeg.jpg"}, []byte{0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x02})
}

func FuzzPNG(f *testing.F) {
	fuzzFormat(f, FormatPNG, []string{"pillow/hopper.png", "pillow/hopper_bw_500.png",
		"pillow/hopper_idat_after_image_end.png"})
}

func FuzzBMP(f *testing.F) {
	fuzzFormat(f, FormatBMP, []string{"pillow/hopper.bmp", "pillow/hopper_rle8.bmp",
		"libjpeg-turbo/shira_bird8.bmp"})
}

func FuzzTIFF(f *testing.F) {
	fuzzFormat(f, FormatTIFF, []string{"pillow/hopper.tif", "pillow/hopper_lzw.tif"})
}

func FuzzWebP(f *testing.F) {
	fuzzFormat(f, FormatWebP, []string{"pillow/hopper.webp", "pillow/flower.webp",
		"pillow/hopper_orientation_6.webp"})
}

func FuzzPNM(f *testing.F) {
	fuzzFormat(f, FormatPNM, []string{"pillow/hopper.ppm", "libjpeg-turbo/testorig.ppm"},
		[]byte("P5 3 2 255\n\x00\x01\x02\x03\x04\x05"),
		[]byte("P6\n# comment\n1 1\n255\n\xff\x00\x7f"),
		[]byte("P5 2 1 65535\n\x01\x00\xff\xff"))
}

func FuzzGIF(f *testing.F) {
	fuzzFormat(f, FormatGIF, []string{"pillow/hopper.gif"})
}
