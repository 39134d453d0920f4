package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// bombHeaders returns, per format, a well-formed header declaring a w x h image with
// (almost) no pixel data behind it.
func bombHeaders(t *testing.T, w, h int) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}

	// JPEG: hopper.jpg with its SOF dimensions patched.
	jpg := append([]byte{}, readFile(t, filepath.Join(corpusDir, "pillow/hopper.jpg"))...)
	patched := false
	for i := 2; i+9 < len(jpg); {
		if jpg[i] != 0xFF {
			t.Fatal("hopper.jpg: unexpected marker layout")
		}
		m := jpg[i+1]
		n := int(binary.BigEndian.Uint16(jpg[i+2:]))
		if m == 0xC0 || m == 0xC1 || m == 0xC2 {
			binary.BigEndian.PutUint16(jpg[i+5:], uint16(h))
			binary.BigEndian.PutUint16(jpg[i+7:], uint16(w))
			patched = true
			break
		}
		i += 2 + n
	}
	if !patched {
		t.Fatal("hopper.jpg: no SOF")
	}
	out["JPEG"] = jpg

	// PNG: signature + IHDR (with a correct CRC) + nothing else.
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	png := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	chunk := append([]byte("IHDR"), ihdr...)
	png = append(png, chunk...)
	png = binary.BigEndian.AppendUint32(png, crc32.ChecksumIEEE(chunk))
	out["PNG"] = png

	// BMP: file header + 40-byte info header, 24-bit, no pixels.
	bmp := []byte("BM")
	bmp = binary.LittleEndian.AppendUint32(bmp, 54)
	bmp = binary.LittleEndian.AppendUint32(bmp, 0)
	bmp = binary.LittleEndian.AppendUint32(bmp, 54)
	bmp = binary.LittleEndian.AppendUint32(bmp, 40)
	bmp = binary.LittleEndian.AppendUint32(bmp, uint32(w))
	bmp = binary.LittleEndian.AppendUint32(bmp, uint32(h))
	bmp = binary.LittleEndian.AppendUint16(bmp, 1)
	bmp = binary.LittleEndian.AppendUint16(bmp, 24)
	bmp = append(bmp, make([]byte, 24)...)
	out["BMP"] = bmp

	out["PNM"] = []byte("P6\n" + strconv.Itoa(w) + " " + strconv.Itoa(h) + "\n255\n")

	// GIF: header and logical screen descriptor.
	gif := []byte("GIF89a")
	gif = binary.LittleEndian.AppendUint16(gif, uint16(w))
	gif = binary.LittleEndian.AppendUint16(gif, uint16(h))
	gif = append(gif, 0, 0, 0, 0x3B)
	out["GIF"] = gif

	// WebP: RIFF + VP8 chunk holding just a key frame header. VP8 sizes have 14 bits,
	// so WebP declares at most 16383x16383 (268 Mpixel, still over the default limit).
	ww, wh := min(w, 16383), min(h, 16383)
	vp8 := []byte{0x10, 0, 0, 0x9D, 0x01, 0x2A, byte(ww), byte(ww >> 8), byte(wh), byte(wh >> 8)}
	webp := []byte("RIFF")
	webp = binary.LittleEndian.AppendUint32(webp, uint32(4+8+len(vp8)))
	webp = append(webp, "WEBPVP8 "...)
	webp = binary.LittleEndian.AppendUint32(webp, uint32(len(vp8)))
	webp = append(webp, vp8...)
	out["WebP"] = webp

	// TIFF: one IFD with the tags a baseline RGB reader needs.
	type entry struct {
		tag, typ uint16
		val      uint32
	}
	entries := []entry{
		{256, 4, uint32(w)}, {257, 4, uint32(h)}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1},
		{273, 4, 0}, {277, 3, 1}, {278, 4, uint32(h)}, {279, 4, uint32(w * h)},
	}
	tiff := []byte("II*\x00")
	tiff = binary.LittleEndian.AppendUint32(tiff, 8)
	tiff = binary.LittleEndian.AppendUint16(tiff, uint16(len(entries)))
	for _, e := range entries {
		tiff = binary.LittleEndian.AppendUint16(tiff, e.tag)
		tiff = binary.LittleEndian.AppendUint16(tiff, e.typ)
		tiff = binary.LittleEndian.AppendUint32(tiff, 1)
		if e.typ == 3 {
			tiff = binary.LittleEndian.AppendUint16(tiff, uint16(e.val))
			tiff = binary.LittleEndian.AppendUint16(tiff, 0)
		} else {
			tiff = binary.LittleEndian.AppendUint32(tiff, e.val)
		}
	}
	tiff = binary.LittleEndian.AppendUint32(tiff, 0)
	out["TIFF"] = tiff
	return out
}

// TestMaxPixelsBeforeAllocation: a header declaring 60000x60000 is refused quickly, with
// the documented message, without allocating anything near the image size.
func TestMaxPixelsBeforeAllocation(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	const limit = 178956970
	for format, data := range bombHeaders(t, 60000, 60000) {
		info, err := d.Probe(data)
		if err != nil {
			t.Errorf("%s: Probe of a valid header: %v", format, err)
			continue
		}
		want := 60000
		if format == "WebP" {
			want = 16383
		}
		if info.Width != want || info.Height != want || info.Format.String() != format {
			t.Errorf("%s: Probe says %s %dx%d", format, info.Format, info.Width, info.Height)
		}
		opt := Options{Out: RGB, MaxPixels: limit}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, _, _, err = d.OutputSize(data, info, opt)
		_, _, _, err2 := d.Decode(data, info, opt, make([]byte, 16))
		_, _, _, err3 := d.Decode(data, Info{}, opt, nil) // probing inside Decode
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		for _, e := range []error{err, err2, err3} {
			if !errors.Is(e, ErrTooManyPixels) {
				t.Errorf("%s: %v, want ErrTooManyPixels", format, e)
			} else if msg := fmt.Sprintf("image %dx%d exceeds max_image_pixels 178956970", want, want); e.Error() != msg {
				t.Errorf("%s: message %q", format, e)
			}
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s: %d bytes allocated while refusing", format, alloc)
		}
		if elapsed > 100*time.Millisecond {
			t.Errorf("%s: refusing took %v", format, elapsed)
		}
		// The C side checks again: a forged Info cannot get a bomb past the limit.
		if format == "JPEG" {
			forged := info
			forged.Width, forged.Height = 128, 128
			if _, _, _, err := d.Decode(data, forged, opt, make([]byte, 128*128*3)); err == nil {
				t.Errorf("JPEG: forged Info accepted")
			}
		}
	}
}

// truncations of a file: very short prefixes and cuts throughout.
func truncations(n int) []int {
	cuts := []int{0, 1, 2, 3, 4, 8, 16, 32, 64, 100}
	for k := 1; k < 20; k++ {
		cuts = append(cuts, n*k/20)
	}
	cuts = append(cuts, n-16, n-3, n-2, n-1)
	return cuts
}

// TestTruncatedData: every prefix of a JPEG fails with an error (never a panic or a
// hang); other formats fail or decode, but never panic.
func TestTruncatedData(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	files := []string{
		"pillow/hopper.jpg", "pillow/app13-multiple.jpg", "libjpeg-turbo/testimgari.jpg",
		"pillow/pil_sample_cmyk.jpg", "pillow/hopper.png", "pillow/hopper.gif",
		"pillow/hopper.bmp", "pillow/hopper_rle8.bmp", "pillow/hopper.ppm",
		"pillow/hopper.webp", "pillow/flower.webp", "pillow/hopper.tif", "pillow/hopper_lzw.tif",
	}
	for _, f := range files {
		full := readFile(t, filepath.Join(corpusDir, f))
		isJPEG := DetectFormat(full) == FormatJPEG
		for _, n := range truncations(len(full)) {
			if n < 0 || n >= len(full) {
				continue
			}
			data := full[:n]
			for _, opt := range []Options{{Out: RGB, AdjustOrientation: true}, {Out: Gray, ROI: Rect{1, 1, 20, 20}, MinWidth: 5, MinHeight: 5}} {
				_, _, _, _, _, err := decodeAll(d, data, opt)
				if isJPEG && opt.ROI.Empty() && err == nil {
					t.Errorf("%s cut at %d of %d bytes: decoded", f, n, len(full))
				}
				if err != nil && err.Error() == "" {
					t.Errorf("%s cut at %d: empty error text", f, n)
				}
			}
		}
	}
}

// TestJunkData: random bytes, alone and behind each format's magic, give errors.
func TestJunkData(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	r := rand.New(rand.NewPCG(7, 8))
	prefixes := [][]byte{nil, {0xFF, 0xD8, 0xFF}, []byte("\x89PNG\r\n\x1a\n"), []byte("GIF89a"),
		[]byte("RIFF\x00\x01\x00\x00WEBPVP8 "), []byte("II*\x00"), []byte("MM\x00*"), []byte("BM"), []byte("P6\n"), []byte("P5 ")}
	for _, p := range prefixes {
		for k := range 200 {
			junk := make([]byte, r.IntN(300))
			for i := range junk {
				junk[i] = byte(r.Uint32())
			}
			data := append(append([]byte{}, p...), junk...)
			if _, _, _, _, _, err := decodeAll(d, data, Options{Out: RGB, MaxPixels: 1 << 24}); err == nil {
				t.Logf("prefix %q junk #%d: decoded", p, k) // possible for tiny BMP/PNM headers
			}
		}
	}
	_, err := d.Probe([]byte{0xFF, 0x00, 0x12, 0x34, 0x56})
	if !errors.Is(err, ErrUnknownFormat) || err.Error() != "not a supported image (first bytes ff 00 12 34 56)" {
		t.Errorf("junk: %v", err)
	}
	if _, err := d.Probe(nil); !errors.Is(err, ErrUnknownFormat) || err.Error() != "not a supported image (empty input)" {
		t.Errorf("empty: %v", err)
	}
}

// TestPNGNamedJPEG: the format comes from the bytes, not the name.
func TestPNGNamedJPEG(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	png := readFile(t, filepath.Join(corpusDir, "pillow/hopper.png"))
	info, err := d.Probe(png)
	if err != nil || info.Format != FormatPNG {
		t.Fatalf("Probe: %v %v", info.Format, err)
	}
	// Info of the wrong format is rejected rather than misread.
	info.Format = FormatJPEG
	if _, _, _, err := d.Decode(png, info, Options{}, make([]byte, 128*128*3)); err == nil {
		t.Error("PNG decoded with a JPEG Info")
	}
}

// TestBadArguments: bad options and buffers are errors.
func TestBadArguments(t *testing.T) {
	d := NewDecoder()
	data := readFile(t, filepath.Join(corpusDir, "pillow/hopper.jpg"))
	info, err := d.Probe(data)
	if err != nil {
		t.Fatal(err)
	}
	bad := []Options{
		{Out: OutputType(7)},
		{ROI: Rect{-1, 0, 10, 10}},
		{ROI: Rect{0, 0, 0, 10}},
		{ROI: Rect{100, 100, 29, 10}},
		{MinWidth: -1},
	}
	for _, opt := range bad {
		if _, _, _, err := d.Decode(data, info, opt, make([]byte, 1<<16)); err == nil {
			t.Errorf("%+v accepted", opt)
		}
	}
	if _, _, _, err := d.Decode(data, info, Options{}, make([]byte, 128*128*3-1)); err == nil {
		t.Error("short destination accepted")
	}
	if _, err := ParseOutputType("YCbCr"); err == nil {
		t.Error("YCbCr accepted")
	}
	for s, want := range map[string]OutputType{"rgb": RGB, "BGR": BGR, "GRAY": Gray} {
		if got, err := ParseOutputType(s); err != nil || got != want {
			t.Errorf("ParseOutputType(%q) = %v, %v", s, got, err)
		}
	}
	d.Close()
	d.Close()
	if _, err := d.Probe(data); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}
