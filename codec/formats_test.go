package codec

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/image/tiff"
)

// testPattern is a deterministic w x h RGB image with edges, gradients and noise.
func testPattern(w, h int) []byte {
	p := make([]byte, w*h*3)
	s := uint32(12345)
	for y := range h {
		for x := range w {
			s = s*1664525 + 1013904223
			i := (y*w + x) * 3
			p[i] = byte(x * 255 / max(1, w-1))
			p[i+1] = byte(y * 255 / max(1, h-1))
			p[i+2] = byte(s >> 24)
		}
	}
	return p
}

// bmpFile assembles a BMP: 14-byte file header, DIB header of hsize bytes (width,
// height, bpp, compression, colours used filled in), extra bytes (masks, palette) and the
// pixel data.
func bmpFile(hsize, w, h, bpp int, compression uint32, clrUsed int, extra, pixels []byte) []byte {
	le := binary.LittleEndian
	dib := make([]byte, hsize)
	le.PutUint32(dib[0:], uint32(hsize))
	if hsize == 12 {
		le.PutUint16(dib[4:], uint16(w))
		le.PutUint16(dib[6:], uint16(h))
		le.PutUint16(dib[8:], 1)
		le.PutUint16(dib[10:], uint16(bpp))
	} else {
		le.PutUint32(dib[4:], uint32(w))
		le.PutUint32(dib[8:], uint32(int32(h)))
		le.PutUint16(dib[12:], 1)
		le.PutUint16(dib[14:], uint16(bpp))
		le.PutUint32(dib[16:], compression)
		le.PutUint32(dib[20:], uint32(len(pixels)))
		le.PutUint32(dib[32:], uint32(clrUsed))
	}
	off := 14 + hsize + len(extra)
	f := []byte("BM")
	f = le.AppendUint32(f, uint32(off+len(pixels)))
	f = le.AppendUint32(f, 0)
	f = le.AppendUint32(f, uint32(off))
	f = append(f, dib...)
	f = append(f, extra...)
	return append(f, pixels...)
}

// bmpRows packs rows (top first) bottom-up or top-down with 4-byte row padding.
func bmpRows(w, h, bpp int, topDown bool, pixel func(x, y int) []byte, index func(x, y int) int) []byte {
	stride := (w*bpp + 31) / 32 * 4
	out := make([]byte, stride*h)
	for r := range h {
		y := h - 1 - r
		if topDown {
			y = r
		}
		row := out[r*stride:]
		for x := range w {
			if bpp <= 8 {
				per := 8 / bpp
				row[x/per] |= byte(index(x, y) << (8 - bpp*(x%per+1)))
			} else {
				copy(row[x*bpp/8:], pixel(x, y))
			}
		}
	}
	return out
}

// bmpPalette makes n colours (blue, green, red, pad) of entry bytes each.
func bmpPalette(n, entry int) []byte {
	p := make([]byte, n*entry)
	for i := range n {
		p[i*entry], p[i*entry+1], p[i*entry+2] = byte(i*37+11), byte(255-i*53), byte(i*91+5)
	}
	return p
}

// rleEncode encodes rows of indices (bottom row first) with encoded runs, absolute
// runs (word aligned), end-of-line and end-of-bitmap codes.
func rleEncode(w, h int, index func(x, y int) int, rle4 bool) []byte {
	var out []byte
	for r := range h {
		y := h - 1 - r
		row := make([]int, w)
		for x := range w {
			row[x] = index(x, y)
		}
		for x := 0; x < len(row); {
			n := 1
			for x+n < len(row) && row[x+n] == row[x] && n < 255 {
				n++
			}
			if n >= 2 || len(row)-x < 4 {
				if rle4 {
					out = append(out, byte(n), byte(row[x]<<4|row[x]))
				} else {
					out = append(out, byte(n), byte(row[x]))
				}
				x += n
				continue
			}
			k := 4 // an absolute run of 4 (even, for PIL 9.4's RLE4 reader)
			out = append(out, 0, byte(k))
			if rle4 {
				out = append(out, byte(row[x]<<4|row[x+1]), byte(row[x+2]<<4|row[x+3]))
			} else {
				for j := range k {
					out = append(out, byte(row[x+j]))
				}
			}
			x += k
		}
		out = append(out, 0, 0)
	}
	return append(out, 0, 1)
}

// goVariants writes the images Go code makes (BMP flavours, 16-bit PNG, GIF frames,
// associated-alpha TIFF) into dir.
func goVariants(t *testing.T, dir string) {
	const w, h = 13, 7
	rgb := testPattern(w, h)
	px := func(x, y int) []byte { return rgb[(y*w+x)*3 : (y*w+x)*3+3] }
	bgr := func(x, y int) []byte { p := px(x, y); return []byte{p[2], p[1], p[0]} }
	idx := func(n int) func(x, y int) int { return func(x, y int) int { return (x/2 + y*3) % n } }
	le := binary.LittleEndian
	pix16 := func(rs, gs, bs uint, rb, gb, bb uint) func(x, y int) []byte {
		return func(x, y int) []byte {
			p := px(x, y)
			v := uint16(p[0])>>(8-rb)<<rs | uint16(p[1])>>(8-gb)<<gs | uint16(p[2])>>(8-bb)<<bs
			return le.AppendUint16(nil, v)
		}
	}
	masks := func(m ...uint32) []byte {
		var b []byte
		for _, v := range m {
			b = le.AppendUint32(b, v)
		}
		return b
	}
	files := map[string][]byte{
		"os2_24.bmp":     bmpFile(12, w, h, 24, 0, 0, nil, bmpRows(w, h, 24, false, bgr, nil)),
		"os2_8.bmp":      bmpFile(12, w, h, 8, 0, 0, bmpPalette(256, 3), bmpRows(w, h, 8, false, nil, idx(256))),
		"v3_1.bmp":       bmpFile(40, w, h, 1, 0, 0, bmpPalette(2, 4), bmpRows(w, h, 1, false, nil, idx(2))),
		"v3_4.bmp":       bmpFile(40, w, h, 4, 0, 0, bmpPalette(16, 4), bmpRows(w, h, 4, false, nil, idx(16))),
		"v3_8_used.bmp":  bmpFile(40, w, h, 8, 0, 20, bmpPalette(20, 4), bmpRows(w, h, 8, false, nil, idx(20))),
		"v3_8_down.bmp":  bmpFile(40, w, -h, 8, 0, 0, bmpPalette(256, 4), bmpRows(w, h, 8, true, nil, idx(256))),
		"v3_16.bmp":      bmpFile(40, w, h, 16, 0, 0, nil, bmpRows(w, h, 16, false, pix16(10, 5, 0, 5, 5, 5), nil)),
		"v3_16_565.bmp":  bmpFile(40, w, h, 16, 3, 0, masks(0xF800, 0x07E0, 0x001F), bmpRows(w, h, 16, false, pix16(11, 5, 0, 5, 6, 5), nil)),
		"v3_24_down.bmp": bmpFile(40, w, -h, 24, 0, 0, nil, bmpRows(w, h, 24, true, bgr, nil)),
		"v3_32.bmp": bmpFile(40, w, h, 32, 0, 0, nil, bmpRows(w, h, 32, false, func(x, y int) []byte {
			return append(bgr(x, y), byte(x*y))
		}, nil)),
		"rle8.bmp": bmpFile(40, w, h, 8, 1, 0, bmpPalette(256, 4), rleEncode(w, h, idx(256), false)),
		"rle4.bmp": bmpFile(40, w, h, 4, 2, 0, bmpPalette(16, 4), rleEncode(w, h, idx(16), true)),
	}
	// A v5 header (124 bytes) with BGRA bit fields inside it.
	v5hdr := bmpFile(124, w, h, 32, 3, 0, nil, bmpRows(w, h, 32, false, func(x, y int) []byte {
		return append(bgr(x, y), 0x80)
	}, nil))
	copy(v5hdr[14+40:], masks(0xFF0000, 0xFF00, 0xFF, 0xFF000000))
	files["v5_32_bitfields.bmp"] = v5hdr

	// PNG: 16-bit RGB and RGBA (PIL keeps the high byte).
	rgb64 := image.NewRGBA64(image.Rect(0, 0, w, h))
	nrgba64 := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			p := px(x, y)
			rgb64.SetRGBA64(x, y, color.RGBA64{uint16(p[0])<<8 | 0x5A, uint16(p[1])<<8 | 0xA5, uint16(p[2]) << 8, 0xFFFF})
			nrgba64.SetNRGBA64(x, y, color.NRGBA64{uint16(p[0])<<8 | 0x11, uint16(p[1]) << 8, uint16(p[2])<<8 | 0xFF, uint16(x * 5000)})
		}
	}
	files["rgb16.png"] = encodeWith(t, func(b *bytes.Buffer) error { return png.Encode(b, rgb64) })
	files["rgba16.png"] = encodeWith(t, func(b *bytes.Buffer) error { return png.Encode(b, nrgba64) })

	// GIF: a frame smaller than the screen, offset, with a transparent index whose
	// colour-table entry is not black.
	pal := color.Palette{}
	for i := range 16 {
		pal = append(pal, color.RGBA{byte(i * 16), byte(255 - i*16), byte(i * 7), 255})
	}
	pal[5] = color.RGBA{} // transparent
	frame := image.NewPaletted(image.Rect(3, 2, 11, 6), pal)
	for y := 2; y < 6; y++ {
		for x := 3; x < 11; x++ {
			frame.SetColorIndex(x, y, uint8((x+y)%16))
		}
	}
	g := encodeWith(t, func(b *bytes.Buffer) error {
		return gif.EncodeAll(b, &gif.GIF{Image: []*image.Paletted{frame}, Delay: []int{0},
			Config: image.Config{ColorModel: pal, Width: w, Height: h}})
	})
	// Give the transparent entry (index 5 of the global table at byte 13) a colour.
	if g[10]&0x80 == 0 {
		t.Fatal("Go's GIF encoder wrote no global colour table")
	}
	copy(g[13+3*5:], []byte{200, 100, 50})
	files["offset_trns.gif"] = g

	// TIFF with associated (premultiplied) alpha.
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			p := px(x, y)
			a := uint32(x * 255 / (w - 1))
			rgba.SetRGBA(x, y, color.RGBA{byte(uint32(p[0]) * a / 255), byte(uint32(p[1]) * a / 255), byte(uint32(p[2]) * a / 255), byte(a)})
		}
	}
	files["premul.tif"] = encodeWith(t, func(b *bytes.Buffer) error { return tiff.Encode(b, rgba, nil) })

	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func encodeWith(t *testing.T, enc func(*bytes.Buffer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := enc(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFormatVariantsVsPIL decodes the variants PIL writes (WebP lossless/alpha/EXIF,
// PNG modes and eXIf orientation, TIFF compressions, modes and orientation tag, BMP,
// GIF, PPM/PGM) and those Go code writes (BMP headers, depths, bit fields and RLE; 16-bit
// PNG; offset GIF frame with a coloured transparent entry; premultiplied TIFF), and
// compares them with PIL's exif_transpose + convert("RGB"). Tolerance: exact, for every
// file (lossy WebP included, see corpusTolerance).
func TestFormatVariantsVsPIL(t *testing.T) {
	requirePIL(t)
	dir := t.TempDir()
	cmd := exec.Command(systemPython, "testdata/pil_encode.py", filepath.Join(corpusDir, "pillow/flower.jpg"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pil_encode.py: %v\n%s", err, out)
	}
	goVariants(t, dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var jobs []pilJob
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		// PIL 9.4 already applies a TIFF's orientation tag when it loads the pixels, and
		// exif_transpose then applies it a second time; its plain load is the reference.
		transpose := !strings.HasSuffix(n, ".tif")
		jobs = append(jobs, pilJob{Path: filepath.Join(dir, n), Mode: "RGB", Transpose: transpose})
	}
	ref := pilDecode(t, jobs)
	d := NewDecoder()
	defer d.Close()
	for i, name := range names {
		data := readFile(t, filepath.Join(dir, name))
		pix, w, h, _, info, err := decodeAll(d, data, Options{Out: RGB, AdjustOrientation: true})
		if name == "cmyk.tif" {
			// golang.org/x/image/tiff has no CMYK; a documented gap.
			if err == nil {
				t.Errorf("%s: decoded; the gap is closed, compare it with PIL", name)
			}
			continue
		}
		if !ref[i].OK {
			t.Errorf("%s: PIL fails (%s); godali: %v", name, ref[i].Err, err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if w != ref[i].W || h != ref[i].H {
			t.Errorf("%s: %dx%d (orientation %d), PIL %dx%d", name, w, h, info.Orientation, ref[i].W, ref[i].H)
			continue
		}
		if s := compare(pix, ref[i].Pix); s.max != 0 {
			t.Errorf("%s (%s %s): max diff %d at pixel %d, mean %.3f", name, info.Format, info.ColorSpace, s.max, s.at/3, s.mean)
		}
		if strings.HasPrefix(name, "exif") || strings.HasPrefix(name, "orient") {
			if want := int(name[len(name)-len(filepath.Ext(name))-1] - '0'); info.Orientation != want {
				t.Errorf("%s: orientation %d, want %d", name, info.Orientation, want)
			}
		}
	}
}

// TestGray16PNG: 16-bit grayscale keeps the high byte of each sample by default, and is
// clipped to 255 with ClipGray16 (PIL's mode "I" to RGB).
func TestGray16PNG(t *testing.T) {
	m := image.NewGray16(image.Rect(0, 0, 5, 3))
	for i := range 15 {
		m.SetGray16(i%5, i/5, color.Gray16{uint16(i * 4321)})
	}
	data := encodeWith(t, func(b *bytes.Buffer) error { return png.Encode(b, m) })
	d := NewDecoder()
	defer d.Close()
	pix, w, h, _, _, err := decodeAll(d, data, Options{Out: Gray})
	if err != nil || w != 5 || h != 3 {
		t.Fatalf("%dx%d %v", w, h, err)
	}
	for i, v := range pix {
		if want := byte(i * 4321 >> 8); v != want {
			t.Errorf("pixel %d: %d, want %d", i, v, want)
		}
	}
	pix, _, _, _, _, err = decodeAll(d, data, Options{Out: RGB, ClipGray16: true})
	if err != nil || len(pix) != 45 {
		t.Fatalf("ClipGray16: %d bytes, %v", len(pix), err)
	}
	for i, v := range pix {
		if want := byte(min(i/3*4321, 255)); v != want {
			t.Errorf("ClipGray16: byte %d: %d, want %d", i, v, want)
		}
	}
}

// TestPNM: the header parser takes comments and any whitespace; the raster is used as is.
func TestPNM(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	raster := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
	pix, w, h, _, _, err := decodeAll(d, append([]byte("P6 # c\n#x\n\t3\r\n2 255\n"), raster...), Options{Out: RGB})
	if err != nil || w != 3 || h != 2 || !bytes.Equal(pix, raster) {
		t.Errorf("P6: %dx%d %v %v", w, h, pix, err)
	}
	pix, w, h, _, _, err = decodeAll(d, append([]byte("P5\n3 2\n255 "), raster[:6]...), Options{Out: BGR, ROI: Rect{1, 0, 2, 2}})
	if want := []byte{2, 2, 2, 3, 3, 3, 5, 5, 5, 6, 6, 6}; err != nil || w != 2 || h != 2 || !bytes.Equal(pix, want) {
		t.Errorf("P5 ROI: %dx%d %v %v", w, h, pix, err)
	}
	for _, bad := range []string{"P3\n1 1\n255\n\x00\x00\x00", "P6\n1 1\n65535\n\x00\x00\x00\x00\x00\x00", "P6\n1 1\n255\n\x00", "P6\n1\n", "P6 0 1 255\n"} {
		if _, _, _, _, _, err := decodeAll(d, []byte(bad), Options{}); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}
