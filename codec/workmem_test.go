package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"
)

// pngHeader is a PNG signature and IHDR (with its CRC) declaring w x h at the given bit
// depth and colour type, and nothing else: 33 bytes.
func pngHeader(w, h int, depth, colorType byte) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, depth, colorType, 0, 0, 0)
	png := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	chunk := append([]byte("IHDR"), ihdr...)
	png = append(png, chunk...)
	return binary.BigEndian.AppendUint32(png, crc32.ChecksumIEEE(chunk))
}

// tiffHeader is a baseline TIFF IFD declaring w x h with samples of bits each
// (RGBA when samples is 4), no strips behind it.
func tiffHeader(w, h, samples, bits int) []byte {
	type entry struct {
		tag, typ uint16
		count    uint32
		val      uint32
	}
	photometric := uint32(2)
	if samples == 1 {
		photometric = 1
	}
	const nEntries = 10
	bitsAt := uint32(8 + 2 + nEntries*12 + 4) // the BitsPerSample array follows the IFD
	entries := []entry{
		{256, 4, 1, uint32(w)}, {257, 4, 1, uint32(h)}, {258, 3, uint32(samples), bitsAt}, {259, 3, 1, 1}, {262, 3, 1, photometric},
		{273, 4, 1, 0}, {277, 3, 1, uint32(samples)}, {278, 4, 1, uint32(h)}, {279, 4, 1, uint32(w * h * samples * bits / 8)},
		{338, 3, 1, 2}, // ExtraSamples: unassociated alpha
	}
	b := []byte("II*\x00")
	b = binary.LittleEndian.AppendUint32(b, 8)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.typ)
		b = binary.LittleEndian.AppendUint32(b, e.count)
		if e.typ == 3 && e.count == 1 {
			b = binary.LittleEndian.AppendUint16(b, uint16(e.val))
			b = binary.LittleEndian.AppendUint16(b, 0)
		} else {
			b = binary.LittleEndian.AppendUint32(b, e.val)
		}
	}
	b = binary.LittleEndian.AppendUint32(b, 0)
	for range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(bits))
	}
	return b
}

// TestWorkingMemoryBound (issue 9, case 3): headers within max_image_pixels whose
// decoder would still build an intermediate far larger than the output (Go's 8-byte
// NRGBA64 for 16-bit RGBA) are refused by OutputSize and Decode, before anything near
// that size is allocated.
func TestWorkingMemoryBound(t *testing.T) {
	const limit = 178956970 // the pipeline default
	cases := map[string][]byte{
		"PNG 16-bit RGBA":  pngHeader(12000, 14000, 16, 6),
		"PNG 16-bit RGB":   pngHeader(12000, 14000, 16, 2),
		"TIFF 16-bit RGBA": tiffHeader(12000, 14000, 4, 16),
		"TIFF 8-bit RGBA":  tiffHeader(12000, 14000, 4, 8),
	}
	d := NewDecoder()
	defer d.Close()
	for name, data := range cases {
		info, err := d.Probe(data)
		if err != nil {
			t.Errorf("%s: Probe: %v", name, err)
			continue
		}
		if px := int64(info.Width) * int64(info.Height); px > limit {
			t.Fatalf("%s: %d pixels: the case must be within max_image_pixels", name, px)
		}
		opt := Options{Out: RGB, MaxPixels: limit}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, _, err1 := d.OutputSize(data, info, opt)
		_, _, _, err2 := d.Decode(data, info, opt, make([]byte, 16))
		_, _, _, err3 := d.Decode(data, Info{}, opt, nil)
		runtime.ReadMemStats(&after)
		for _, e := range []error{err1, err2, err3} {
			if !errors.Is(e, ErrTooManyPixels) || !strings.Contains(e.Error(), "working memory") {
				t.Errorf("%s: %v, want a working-memory ErrTooManyPixels", name, e)
			}
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s: %d bytes allocated while refusing", name, alloc)
		}
	}
	// Without a limit the bound is off too (the caller asked for no limit).
	if err := checkWork(Info{Format: FormatPNG, WorkBytes: 1 << 40}, Options{}); err != nil {
		t.Errorf("no limit: %v", err)
	}
}

// TestHeaderTheDataCannotFill (issue 9, case 3): within the pixel and working-memory
// limits, a header whose data cannot possibly be in the file (binary PNM and
// uncompressed BMP rasters, PNG scanlines beyond zlib's 1032:1) is refused by
// OutputSize as truncated, so no output is sized for it.
func TestHeaderTheDataCannotFill(t *testing.T) {
	bombs := bombHeaders(t, 10000, 10000)
	cases := map[string][]byte{
		"PNG 8-bit RGBA": pngHeader(12000, 14000, 8, 6),
		"PNG 8-bit RGB":  bombs["PNG"],
		"BMP":            bombs["BMP"],
		"PNM":            bombs["PNM"],
	}
	d := NewDecoder()
	defer d.Close()
	for name, data := range cases {
		info, err := d.Probe(data)
		if err != nil {
			t.Errorf("%s: Probe: %v", name, err)
			continue
		}
		_, _, _, err = d.OutputSize(data, info, Options{Out: RGB, MaxPixels: 178956970})
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: OutputSize: %v, want ErrTruncated", name, err)
		}
	}
	// A real PNG that compresses far (a flat image) still passes.
	d2 := NewDecoder()
	defer d2.Close()
	for _, f := range []string{"pillow/hopper.png", "pillow/hopper.bmp", "pillow/hopper.ppm"} {
		data := readFile(t, corpusDir+"/"+f)
		info, err := d2.Probe(data)
		if err != nil {
			t.Fatal(f, err)
		}
		if _, _, _, err := d2.OutputSize(data, info, Options{Out: RGB, MaxPixels: 178956970}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// patchSOF returns a copy of a JPEG with its frame header declaring w x h.
func patchSOF(t *testing.T, jpg []byte, w, h int) []byte {
	jpg = append([]byte{}, jpg...)
	for i := 2; i+9 < len(jpg); {
		m := jpg[i+1]
		if jpg[i] != 0xFF {
			break
		}
		if m == 0xC0 || m == 0xC1 || m == 0xC2 {
			binary.BigEndian.PutUint16(jpg[i+5:], uint16(h))
			binary.BigEndian.PutUint16(jpg[i+7:], uint16(w))
			return jpg
		}
		i += 2 + int(binary.BigEndian.Uint16(jpg[i+2:]))
	}
	t.Fatal("no SOF marker")
	return nil
}

// TestProgressiveJPEGWorkingMemory: a progressive JPEG decodes from a whole-image
// coefficient buffer (64 16-bit coefficients per 8x8 block of every component), which
// Probe reports; a 4:4:4 one of 12000x12000 (within max_image_pixels) needs 864 MB of
// them and is refused.
func TestProgressiveJPEGWorkingMemory(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	// 256x160, 4:2:0: luma 32x20 blocks, chroma 16x10 each.
	info, err := d.Probe(readFile(t, corpusDir+"/pillow/app13-multiple.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(32*20+2*16*10) * 128; !info.Progressive || info.WorkBytes != want {
		t.Errorf("4:2:0 progressive: WorkBytes %d (progressive %v), want %d", info.WorkBytes, info.Progressive, want)
	}
	// Sequential images decode row by row.
	if info, err := d.Probe(readFile(t, corpusDir+"/pillow/hopper.jpg")); err != nil || info.WorkBytes != 0 {
		t.Errorf("sequential: WorkBytes %d, %v", info.WorkBytes, err)
	}
	big := patchSOF(t, readFile(t, corpusDir+"/pillow/icc_profile_big.jpg"), 12000, 12000) // progressive 4:4:4
	info, err = d.Probe(big)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1500*1500*3) * 128; info.WorkBytes != want {
		t.Errorf("4:4:4 progressive 12000x12000: WorkBytes %d, want %d", info.WorkBytes, want)
	}
	opt := Options{Out: RGB, MaxPixels: 178956970}
	_, _, _, err1 := d.OutputSize(big, info, opt)
	_, _, _, err2 := d.Decode(big, Info{}, opt, nil)
	for _, e := range []error{err1, err2} {
		if !errors.Is(e, ErrTooManyPixels) || !strings.Contains(e.Error(), "working memory") {
			t.Errorf("4:4:4 progressive 12000x12000: %v, want a working-memory error", e)
		}
	}
	// libjpeg enforces its own share: with the header checks bypassed (a forged Info),
	// the coefficient buffer still cannot exceed max_memory_to_use.
	forged := info
	forged.WorkBytes, forged.minData = 0, 0
	dst := make([]byte, 16)
	if _, _, _, err := d.Decode(big, forged, Options{Out: RGB, MaxPixels: 150_000_000, ROI: Rect{0, 0, 2, 2}}, dst); !errors.Is(err, ErrTooManyPixels) || !strings.Contains(err.Error(), "working memory") {
		t.Errorf("libjpeg's bound: %v", err)
	} else {
		t.Logf("libjpeg refuses: %v", err)
	}
}

// TestJPEGDataTooShortForHeader: a Huffman-coded JPEG needs at least 2 bits per 8x8 block
// (1 in progressive DC scans), so a real image's body under a SOF patched to 13000x13000
// or 8000x8000 (within max_image_pixels) cannot hold the image: OutputSize and Decode refuse it as
// truncated before any output is sized for it (libjpeg would fill ~500 MB with grey, as
// PIL does). The unpatched images, and sizes whose bound the body meets, still decode.
func TestJPEGDataTooShortForHeader(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	opt := Options{Out: RGB, MaxPixels: 178956970}
	for _, tc := range []struct {
		name string
		size int
	}{{"hopper.jpg", 13000}, {"app13-multiple.jpg", 8000}} { // sequential, progressive
		name, size := tc.name, tc.size
		jpg := readFile(t, corpusDir+"/pillow/"+name)
		info, err := d.Probe(jpg)
		if err != nil {
			t.Fatal(err)
		}
		w, h, c, err := d.OutputSize(jpg, info, opt)
		if err != nil {
			t.Fatalf("%s as stored: %v", name, err)
		}
		if _, _, _, err := d.Decode(jpg, info, opt, make([]byte, w*h*c)); err != nil {
			t.Fatalf("%s as stored: %v", name, err)
		}
		// The bound, computed independently: blocks of a 4:2:0 or 4:4:4 image from the
		// sampling the file states, 2 bits each (sequential) or 1 bit (progressive).
		bits := int64(2)
		if info.Progressive {
			bits = 1
		}
		big := patchSOF(t, jpg, size, size)
		binfo, err := d.Probe(big)
		if err != nil {
			t.Fatal(err)
		}
		blocks := int64(size / 8 * size / 8) // luma
		if info.Components == 3 {
			blocks += 2 * chromaBlocks(t, jpg, size)
		}
		if want := blocks * bits / 8; binfo.minData != want {
			t.Errorf("%s at %dx%[2]d: minData %d, want %d", name, size, binfo.minData, want)
		}
		if int64(len(big)) >= binfo.minData {
			t.Fatalf("%s: %d bytes, not short of %d", name, len(big), binfo.minData)
		}
		_, _, _, err1 := d.OutputSize(big, binfo, opt)
		_, _, _, err2 := d.Decode(big, Info{}, opt, nil)
		for _, e := range []error{err1, err2} {
			if !errors.Is(e, ErrTruncated) || !strings.Contains(e.Error(), fmt.Sprintf("%dx%[1]d", size)) {
				t.Errorf("%s at %dx%[2]d: %v, want a truncation error naming the size", name, size, e)
			}
		}
	}
}

// chromaBlocks is the number of 8x8 blocks of one chroma component of a w x w image,
// from the sampling factors in the SOF of jpg (components 1 and 2 equal).
func chromaBlocks(t *testing.T, jpg []byte, w int) int64 {
	for i := 2; i+9 < len(jpg); {
		m := jpg[i+1]
		if m == 0xC0 || m == 0xC1 || m == 0xC2 {
			hv := func(k int) (int, int) { b := jpg[i+10+3*k+1]; return int(b >> 4), int(b & 15) }
			h0, v0 := hv(0)
			h1, v1 := hv(1)
			cw := (w*h1/h0 + 7) / 8
			ch := (w*v1/v0 + 7) / 8
			return int64(cw * ch)
		}
		i += 2 + int(binary.BigEndian.Uint16(jpg[i+2:]))
	}
	t.Fatal("no SOF marker")
	return 0
}
