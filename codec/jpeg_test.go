package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/godali/godali/internal/testref"
)

// roiFiles cover the JPEG flavours ROI decoding must handle: 4:2:0, 4:2:2, 4:4:4,
// grayscale, progressive 4:2:0 and 4:4:4, arithmetic coding, YCCK, odd sizes.
var roiFiles = []string{
	"pillow/flower.jpg",                // 480x360 4:2:0
	"pillow/iptc.jpg",                  // 640x480 4:2:2
	"pillow/flower2.jpg",               // 300x225 4:4:4
	"pillow/hopper_gray.jpg",           // grayscale
	"pillow/app13-multiple.jpg",        // progressive 4:2:0
	"pillow/icc_profile_big.jpg",       // progressive 4:4:4
	"libjpeg-turbo/testimgari.jpg",     // arithmetic, 227x149
	"libjpeg-turbo/testimgint.jpg",     // progressive, 227x149
	"pillow/pil_sample_cmyk.jpg",       // YCCK
	"pillow/junk_jpeg_header.jpg",      // 1024x768, junk between markers
	"pillow/orientation_rectangle.jpg", // 2x1, EXIF orientation 8
	// progressive, some AC coefficients never refined: libjpeg's block smoothing runs
	"../sampling/prog_smooth420_211x157.jpg",
	"../sampling/prog_smooth444_170x131.jpg",
}

// exifSegment builds an APP1 Exif segment whose IFD0 holds only Orientation = o.
func exifSegment(o int, bigEndian bool) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	tiff := []byte("II*\x00")
	if bigEndian {
		bo, tiff = binary.BigEndian, []byte("MM\x00*")
	}
	tiff = bo.AppendUint32(tiff, 8)      // IFD0 offset
	tiff = bo.AppendUint16(tiff, 1)      // one entry
	tiff = bo.AppendUint16(tiff, 0x0112) // Orientation
	tiff = bo.AppendUint16(tiff, 3)      // SHORT
	tiff = bo.AppendUint32(tiff, 1)      // count
	tiff = bo.AppendUint16(tiff, uint16(o))
	tiff = bo.AppendUint16(tiff, 0)
	tiff = bo.AppendUint32(tiff, 0) // no next IFD
	payload := append([]byte(exifPrefix), tiff...)
	seg := []byte{0xFF, 0xE1}
	seg = binary.BigEndian.AppendUint16(seg, uint16(len(payload)+2))
	return append(seg, payload...)
}

// withOrientation inserts an Exif segment right after SOI, so that it is the first one
// (the one PIL and godali honour).
func withOrientation(jpg []byte, o int, bigEndian bool) []byte {
	out := append([]byte{}, jpg[:2]...)
	out = append(out, exifSegment(o, bigEndian)...)
	return append(out, jpg[2:]...)
}

// randomROIs returns n windows inside a w x h image, plus the corner and edge cases.
func randomROIs(r *rand.Rand, w, h, n int) []Rect {
	rs := []Rect{{0, 0, 1, 1}, {w - 1, h - 1, 1, 1}, {0, 0, w, 1}, {0, h - 1, w, 1}, {0, 0, 1, h}, {w - 1, 0, 1, h}, {0, 0, w, h}}
	for range n {
		rw, rh := 1+r.IntN(w), 1+r.IntN(h)
		rs = append(rs, Rect{r.IntN(w - rw + 1), r.IntN(h - rh + 1), rw, rh})
	}
	return rs
}

// TestROIEqualsFullWindow: a ROI decode equals the same window of the full decode, bit
// for bit, for every orientation and output type (no scaling).
func TestROIEqualsFullWindow(t *testing.T) {
	testref.Long(t, "a sweep of windows")
	d := NewDecoder()
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range roiFiles {
		base := readFile(t, filepath.Join(corpusDir, f))
		for o := 1; o <= 8; o++ {
			data := withOrientation(base, o, o%2 == 0)
			for _, out := range []OutputType{RGB, BGR, Gray} {
				opt := Options{Out: out, AdjustOrientation: true}
				full, w, h, c, info, err := decodeAll(d, data, opt)
				if err != nil {
					t.Fatalf("%s o=%d: %v", f, o, err)
				}
				if info.Orientation != o {
					t.Fatalf("%s: orientation %d, injected %d", f, info.Orientation, o)
				}
				for _, roi := range randomROIs(r, w, h, 4) {
					opt.ROI = roi
					pix, rw, rh, _, _, err := decodeAll(d, data, opt)
					if err != nil {
						t.Fatalf("%s o=%d %s ROI %+v: %v", f, o, out, roi, err)
					}
					if rw != roi.W || rh != roi.H {
						t.Fatalf("%s o=%d ROI %+v: got %dx%d", f, o, roi, rw, rh)
					}
					if s := compare(pix, window(full, w, c, roi)); s.max != 0 {
						t.Errorf("%s o=%d %s ROI %+v: max diff %d (byte %d), mean %.3f", f, o, out, roi, s.max, s.at, s.mean)
					}
				}
			}
		}
	}
}

// TestROISmoothingEqualsFull: a ROI decode of a progressive JPEG whose block smoothing
// runs (tests/data/sampling/prog_smooth*) equals the same window of the full decode,
// bit for bit, plain and Embed: many windows of two small files, in the default suite
// (TestROIEqualsFullWindow, long, sweeps every orientation and output type).
func TestROISmoothingEqualsFull(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	r := rand.New(rand.NewPCG(28, 2))
	for _, f := range []string{"../sampling/prog_smooth420_211x157.jpg", "../sampling/prog_smooth444_170x131.jpg"} {
		base := readFile(t, filepath.Join(corpusDir, f))
		for _, o := range []int{1, 6} {
			data := withOrientation(base, o, false)
			opt := Options{Out: RGB, AdjustOrientation: true}
			full, w, h, c, info, err := decodeAll(d, data, opt)
			if err != nil {
				t.Fatal(err)
			}
			if !info.Progressive {
				t.Fatalf("%s: not progressive", f)
			}
			for _, roi := range randomROIs(r, w, h, 60) {
				for _, embed := range []bool{false, true} {
					opt.ROI, opt.Embed = roi, embed
					pix, _, _, _, _, err := decodeAll(d, data, opt)
					if err != nil {
						t.Fatalf("%s o=%d ROI %+v: %v", f, o, roi, err)
					}
					if embed {
						pix = window(pix, w, c, roi)
					}
					if s := compare(pix, window(full, w, c, roi)); s.max != 0 {
						t.Errorf("%s o=%d ROI %+v embed %v: max diff %d (byte %d) from the full decode", f, o, roi, embed, s.max, s.at)
					}
				}
			}
		}
	}
}

// TestEmbedROIEqualsFull: with Embed, a ROI decode returns the whole image's size, its
// ROI identical to the full decode's, bit for bit, and (JPEG) every byte outside the
// ROI as the destination held it; for every orientation and output type. Other formats
// decode the whole image.
func TestEmbedROIEqualsFull(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	r := rand.New(rand.NewPCG(28, 1))
	files := append(roiFiles, "pillow/hopper.png", "pillow/hopper.bmp",
		"../sampling/s440_203x131.jpg", "../sampling/s440_97x75_progressive.jpg", "../sampling/s411_161x109.jpg",
		"../sampling/s410_150x99.jpg", "../sampling/s420_arith_123x87.jpg")
	for i, f := range files {
		base := readFile(t, filepath.Join(corpusDir, f))
		for _, o := range []int{1 + i%8, 1 + (i+3)%8, 6} {
			data := base
			if DetectFormat(base) == FormatJPEG {
				data = withOrientation(base, o, o%2 == 0)
			}
			for _, out := range []OutputType{RGB, Gray} {
				opt := Options{Out: out, AdjustOrientation: true}
				full, w, h, c, info, err := decodeAll(d, data, opt)
				if err != nil {
					t.Fatalf("%s o=%d: %v", f, o, err)
				}
				for _, roi := range randomROIs(r, w, h, 3)[5:] {
					opt.ROI, opt.Embed, opt.MinWidth, opt.MinHeight = roi, true, 1, 1
					ew, eh, ec, err := d.OutputSize(data, info, opt)
					if err != nil || ew != w || eh != h || ec != c {
						t.Fatalf("%s o=%d ROI %+v: OutputSize %dx%dx%d, %v; want the whole %dx%dx%d", f, o, roi, ew, eh, ec, err, w, h, c)
					}
					pix := make([]byte, len(full))
					for k := range pix {
						pix[k] = byte(k*7 + 1)
					}
					if _, _, _, err := d.Decode(data, info, opt, pix); err != nil {
						t.Fatalf("%s o=%d ROI %+v: %v", f, o, roi, err)
					}
					if s := compare(window(pix, w, c, roi), window(full, w, c, roi)); s.max != 0 {
						t.Fatalf("%s o=%d %s ROI %+v: max diff %d (byte %d) from the full decode", f, o, out, roi, s.max, s.at)
					}
					if info.Format != FormatJPEG {
						if s := compare(pix, full); s.max != 0 {
							t.Fatalf("%s: not decoded whole (max diff %d)", f, s.max)
						}
						continue
					}
					for y := range h {
						for x := range w {
							if x >= roi.X && x < roi.X+roi.W && y >= roi.Y && y < roi.Y+roi.H {
								continue
							}
							for k := (y*w + x) * c; k < (y*w+x+1)*c; k++ {
								if pix[k] != byte(k*7+1) {
									t.Fatalf("%s o=%d ROI %+v: pixel (%d, %d) outside the ROI was written", f, o, roi, x, y)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestROITruncatedBelowWindow: data cut short below a ROI fail as the full decode does,
// with the same error, for a plain, a DCT-scaled and an Embed ROI decode (the rows
// below are entropy-decoded, not dropped), sequential and progressive; and so do data
// missing only their EOI marker.
func TestROITruncatedBelowWindow(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	for _, f := range []string{"pillow/flower.jpg", "pillow/iptc.jpg", "pillow/app13-multiple.jpg",
		"../sampling/prog_smooth420_211x157.jpg"} {
		base := readFile(t, filepath.Join(corpusDir, f))
		for _, cut := range []int{len(base) * 9 / 10, len(base) - 2} {
			data := base[:cut]
			info, err := d.Probe(data)
			if err != nil {
				t.Fatal(err)
			}
			w, h := info.Width, info.Height
			dst := make([]byte, w*h*3)
			_, _, _, full := d.Decode(data, info, Options{Out: RGB}, dst)
			if !errors.Is(full, ErrTruncated) {
				t.Fatalf("%s cut at %d of %d bytes: full decode: %v, want a truncation error", f, cut, len(base), full)
			}
			roi := Rect{w / 8, h / 20, w / 2, h / 5}
			for _, opt := range []Options{
				{Out: RGB, ROI: roi},
				{Out: RGB, ROI: roi, MinWidth: w / 8, MinHeight: h / 20},
				{Out: RGB, ROI: roi, Embed: true},
			} {
				if _, _, _, err := d.Decode(data, info, opt, dst); err == nil || err.Error() != full.Error() {
					t.Errorf("%s cut at %d of %d bytes: ROI %+v above the cut (min %dx%d, embed %v): %v, want %v",
						f, cut, len(base), opt.ROI, opt.MinWidth, opt.MinHeight, opt.Embed, err, full)
				}
			}
		}
	}
}

// TestROIEntropyCutBeforeEOI: entropy data cut short but followed by an EOI marker is
// not a truncated file (libjpeg meets the marker, fills the rest with zeros and only
// warns): a full decode succeeds, and so must a ROI decode that stops above the cut
// without reading on (the EOI look-ahead), with the full decode's pixels.
func TestROIEntropyCutBeforeEOI(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	for _, f := range []string{"pillow/flower.jpg", "pillow/iptc.jpg"} {
		base := readFile(t, filepath.Join(corpusDir, f))
		data := append(append([]byte(nil), base[:len(base)*9/10]...), 0xFF, 0xD9)
		info, err := d.Probe(data)
		if err != nil {
			t.Fatal(err)
		}
		w, h := info.Width, info.Height
		full := make([]byte, w*h*3)
		if _, _, _, err := d.Decode(data, info, Options{Out: RGB}, full); err != nil {
			t.Fatalf("%s: full decode: %v", f, err)
		}
		roi := Rect{w / 8, h / 20, w / 2, h / 5}
		got := make([]byte, roi.W*roi.H*3)
		if _, _, _, err := d.Decode(data, info, Options{Out: RGB, ROI: roi}, got); err != nil {
			t.Fatalf("%s: ROI decode: %v", f, err)
		}
		for y := 0; y < roi.H; y++ {
			row := full[((roi.Y+y)*w+roi.X)*3:][:roi.W*3]
			if !bytes.Equal(got[y*roi.W*3:][:roi.W*3], row) {
				t.Fatalf("%s: ROI row %d differs from the full decode's", f, y)
			}
		}
	}
}

// decodeAtScale decodes with the DCT scale forced to n/8, bypassing the choice by
// MinWidth/MinHeight.
func decodeAtScale(t *testing.T, d *Decoder, data []byte, opt Options, n int) ([]byte, plan) {
	t.Helper()
	info, err := d.Probe(data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planAt(info, opt, n)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, p.ow*p.oh*p.oc)
	if err := d.decodeJPEG(data, info, p, opt, dst); err != nil {
		t.Fatalf("scale %d/8 ROI %+v: %v", n, opt.ROI, err)
	}
	return dst, p
}

// TestScaledROIEqualsScaledWindow: at every scale n/8, a ROI decode equals the matching
// window of the full decode at the same scale, bit for bit, for every orientation.
func TestScaledROIEqualsScaledWindow(t *testing.T) {
	testref.Long(t, "a sweep of windows and scales")
	d := NewDecoder()
	defer d.Close()
	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range roiFiles {
		if f == "pillow/junk_jpeg_header.jpg" {
			continue // the largest file; the unscaled test covers it
		}
		base := readFile(t, filepath.Join(corpusDir, f))
		for o := 1; o <= 8; o++ {
			data := withOrientation(base, o, false)
			for n := 1; n <= 7; n++ {
				opt := Options{Out: RGB, AdjustOrientation: true}
				full, fp := decodeAtScale(t, d, data, opt, n)
				info, _ := d.Probe(data)
				ow, oh := info.OrientedSize(true)
				for _, roi := range randomROIs(r, ow, oh, 3) {
					opt.ROI = roi
					pix, p := decodeAtScale(t, d, data, opt, n)
					// The window of the scaled full image the plan covers, in oriented
					// coordinates of the scaled image.
					sw := orientedRect(Rect{p.rx, p.ry, p.rw, p.rh}, p.orient, fp.rw, fp.rh)
					if s := compare(pix, window(full, fp.ow, 3, sw)); s.max != 0 {
						t.Errorf("%s o=%d n=%d ROI %+v: max diff %d, mean %.3f", f, o, n, roi, s.max, s.mean)
					}
				}
			}
		}
	}
}

// orientedRect maps a rectangle of a stored W x H image into the upright image: the
// inverse of storedRect, written out separately for the test.
func orientedRect(r Rect, o, W, H int) Rect {
	OW, OH := W, H
	if o >= 5 {
		OW, OH = H, W
	}
	// Search the upright rectangle whose stored image is r: corners map one to one.
	x0, y0 := orientPoint(r.X, r.Y, o, W, H)
	x1, y1 := orientPoint(r.X+r.W-1, r.Y+r.H-1, o, W, H)
	out := Rect{min(x0, x1), min(y0, y1), abs(x1-x0) + 1, abs(y1-y0) + 1}
	if out.X+out.W > OW || out.Y+out.H > OH {
		panic("orientedRect out of range")
	}
	return out
}

// orientPoint is where stored pixel (x, y) of a W x H image lands after PIL's
// exif_transpose for orientation o.
func orientPoint(x, y, o, W, H int) (int, int) {
	switch o {
	case 2: // FLIP_LEFT_RIGHT
		return W - 1 - x, y
	case 3: // ROTATE_180
		return W - 1 - x, H - 1 - y
	case 4: // FLIP_TOP_BOTTOM
		return x, H - 1 - y
	case 5: // TRANSPOSE
		return y, x
	case 6: // ROTATE_270 (clockwise quarter turn)
		return H - 1 - y, x
	case 7: // TRANSVERSE
		return H - 1 - y, W - 1 - x
	case 8: // ROTATE_90 (counter-clockwise quarter turn)
		return y, W - 1 - x
	}
	return x, y
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// TestOrientationAllVsPIL: all eight orientations, injected into a non-square photo in
// both byte orders, against PIL's exif_transpose; and the ROI of an oriented, scaled
// decode against PIL's draft (its DCT scaling) + exif_transpose + crop.
func TestOrientationAllVsPIL(t *testing.T) {
	requirePIL(t)
	base := readFile(t, filepath.Join(corpusDir, "pillow/flower.jpg")) // 480x360
	dir := t.TempDir()
	var jobs []pilJob
	var files [][]byte
	for o := 1; o <= 8; o++ {
		for _, be := range []bool{false, true} {
			data := withOrientation(base, o, be)
			p := filepath.Join(dir, fmt.Sprintf("o%d_%v.jpg", o, be))
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, data)
			jobs = append(jobs, pilJob{Path: p, Mode: "RGB", Transpose: true},
				pilJob{Path: p, Mode: "RGB", Transpose: true, Draft: []int{240, 180}}) // scale 1/2
		}
	}
	ref := pilDecode(t, jobs)
	d := NewDecoder()
	defer d.Close()
	for i, data := range files {
		o := i/2 + 1
		full, half := ref[2*i], ref[2*i+1]
		pix, w, h, _, _, err := decodeAll(d, data, Options{Out: RGB, AdjustOrientation: true})
		if err != nil {
			t.Fatal(err)
		}
		if w != full.W || h != full.H {
			t.Fatalf("o=%d: %dx%d, PIL %dx%d", o, w, h, full.W, full.H)
		}
		if s := compare(pix, full.Pix); s.max > 1 {
			t.Errorf("o=%d: max diff %d vs PIL, mean %.3f", o, s.max, s.mean)
		}
		// A ROI of the upright image, scaled by 1/2: MinWidth/MinHeight at half the
		// ROI make 4/8 the smallest allowed scale.
		roi := Rect{X: 37, Y: 21, W: 160, H: 120}
		if o >= 5 {
			roi = Rect{X: 21, Y: 37, W: 120, H: 160}
		}
		opt := Options{Out: RGB, AdjustOrientation: true, ROI: roi, MinWidth: roi.W / 2, MinHeight: roi.H / 2}
		pix, w, h, _, _, err = decodeAll(d, data, opt)
		if err != nil {
			t.Fatal(err)
		}
		// Scaled ROI: [floor(x/2), ceil((x+w)/2)) in each axis.
		want := Rect{roi.X / 2, roi.Y / 2, (roi.X+roi.W+1)/2 - roi.X/2, (roi.Y+roi.H+1)/2 - roi.Y/2}
		if w != want.W || h != want.H {
			t.Fatalf("o=%d scaled ROI: %dx%d, want %dx%d", o, w, h, want.W, want.H)
		}
		if half.W != 240 && half.W != 180 {
			t.Fatalf("PIL draft gave %dx%d", half.W, half.H)
		}
		if s := compare(pix, window(half.Pix, half.W, 3, want)); s.max > 1 {
			t.Errorf("o=%d scaled ROI: max diff %d vs PIL draft, mean %.3f", o, s.max, s.mean)
		}
	}
}

// TestScaledVsPILDraft: full decodes at 1/8, 2/8 and 4/8 equal PIL's draft mode, which
// asks libjpeg for the same scaling.
func TestScaledVsPILDraft(t *testing.T) {
	var jobs []pilJob
	for _, f := range roiFiles {
		p := filepath.Join(corpusDir, f)
		info, err := NewDecoder().Probe(readFile(t, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 4} {
			// PIL's draft picks the denominator min(W // w, H // h) rounded down to a
			// power of two, so ask for the rounded-down size.
			jobs = append(jobs, pilJob{Path: p, Mode: "RGB", Draft: []int{max(1, info.Width*n/8), max(1, info.Height*n/8)}})
		}
	}
	ref := pilDecode(t, jobs)
	d := NewDecoder()
	defer d.Close()
	for i, f := range roiFiles {
		data := readFile(t, filepath.Join(corpusDir, f))
		for k, n := range []int{1, 2, 4} {
			want := ref[3*i+k]
			if !want.OK {
				t.Fatalf("%s: PIL: %s", f, want.Err)
			}
			pix, p := decodeAtScale(t, d, data, Options{Out: RGB}, n)
			if p.ow != want.W || p.oh != want.H {
				if p.ow > 1 && p.oh > 1 {
					t.Errorf("%s n=%d: %dx%d, PIL draft %dx%d", f, n, p.ow, p.oh, want.W, want.H)
				}
				continue // too small for PIL's draft to reach this scale
			}
			if s := compare(pix, want.Pix); s.max > 1 {
				t.Errorf("%s n=%d: max diff %d vs PIL draft, mean %.3f", f, n, s.max, s.mean)
			}
		}
	}
}

// boxDownscale averages a full-resolution RGB image over the footprint of each pixel of
// the image scaled by n/8 (pixel i covers [i*8/n, (i+1)*8/n)), with fractional coverage.
func boxDownscale(src []byte, w, h, n int) []byte {
	sw, sh := scaledDim(w, n), scaledDim(h, n)
	f := 8 / float64(n)
	out := make([]byte, sw*sh*3)
	weights := func(i, limit int) (int, int, func(int) float64) {
		a, b := float64(i)*f, math.Min(float64(i+1)*f, float64(limit))
		lo, hi := int(a), int(math.Ceil(b))
		return lo, hi, func(k int) float64 {
			return math.Min(b, float64(k+1)) - math.Max(a, float64(k))
		}
	}
	for y := range sh {
		y0, y1, wy := weights(y, h)
		for x := range sw {
			x0, x1, wx := weights(x, w)
			var acc [3]float64
			var tot float64
			for yy := y0; yy < y1; yy++ {
				for xx := x0; xx < x1; xx++ {
					wt := wy(yy) * wx(xx)
					tot += wt
					for c := range 3 {
						acc[c] += wt * float64(src[(yy*w+xx)*3+c])
					}
				}
			}
			for c := range 3 {
				out[(y*sw+x)*3+c] = byte(math.Round(acc[c] / tot))
			}
		}
	}
	return out
}

// TestScaledCloseToBoxFilter: DCT scaling by n/8 (n = 1..7) is close to a box
// downscale of the full decode. libjpeg's scaled IDCTs are not box filters, so the
// tolerance is statistical: mean absolute difference <= 2.5 and PSNR >= 33 dB on these
// photos (measured: mean 0.25..2.0, PSNR 37..52 dB; single pixels at sharp edges differ
// by up to about 55).
func TestScaledCloseToBoxFilter(t *testing.T) {
	testref.Long(t, "a sweep of scales")
	d := NewDecoder()
	defer d.Close()
	for _, f := range []string{"pillow/flower.jpg", "pillow/iptc.jpg", "pillow/flower2.jpg", "pillow/junk_jpeg_header.jpg"} {
		data := readFile(t, filepath.Join(corpusDir, f))
		full, w, h, _, _, err := decodeAll(d, data, Options{Out: RGB})
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 7; n++ {
			pix, _ := decodeAtScale(t, d, data, Options{Out: RGB}, n)
			ref := boxDownscale(full, w, h, n)
			s := compare(pix, ref)
			var mse float64
			for i := range pix {
				e := float64(pix[i]) - float64(ref[i])
				mse += e * e
			}
			psnr := 10 * math.Log10(255*255/(mse/float64(len(pix))))
			t.Logf("%s n=%d: mean %.2f max %d PSNR %.1f dB", f, n, s.mean, s.max, psnr)
			if s.mean > 2.5 || psnr < 33 {
				t.Errorf("%s n=%d: mean diff %.2f, PSNR %.1f dB vs box downscale", f, n, s.mean, psnr)
			}
		}
	}
}

// TestScaleChoice: MinWidth/MinHeight pick the smallest n/8 whose output covers them.
func TestScaleChoice(t *testing.T) {
	info := Info{Format: FormatJPEG, Width: 500, Height: 375, Orientation: 6}
	cases := []struct {
		opt  Options
		want int
	}{
		{Options{}, 8},
		{Options{MinWidth: 224, MinHeight: 224}, 8},          // 5/8 would do (235), 4/8 not (188): 5/8's IDCT is plain C
		{Options{MinWidth: 180, MinHeight: 180}, 4},          // 375*4/8 = 188 >= 180
		{Options{MinWidth: 1, MinHeight: 1}, 1},              // 47x63
		{Options{MinWidth: 600}, 8},                          // unreachable: no scaling
		{Options{AdjustOrientation: true, MinWidth: 300}, 8}, // upright width is 375: 7/8 only
		{Options{ROI: Rect{10, 10, 100, 80}, MinWidth: 50, MinHeight: 20}, 4},
		{Options{ROI: Rect{10, 10, 100, 80}, MinWidth: 51, MinHeight: 20}, 8},
		{Options{ROI: Rect{10, 10, 100, 80}, MinWidth: 30, MinHeight: 20}, 4}, // 3/8 (38x30) is not used
		{Options{ROI: Rect{10, 10, 100, 80}, MinWidth: 20, MinHeight: 20}, 2},
	}
	for _, tc := range cases {
		p, err := makePlan(info, tc.opt, true)
		if err != nil {
			t.Fatal(err)
		}
		if p.scale != tc.want {
			t.Errorf("%+v: scale %d/8, want %d/8", tc.opt, p.scale, tc.want)
		}
		if tc.opt.MinWidth > 0 || tc.opt.MinHeight > 0 {
			for _, n := range DCTScales {
				if q, _ := planAt(info, tc.opt, n); n < p.scale && q.ow >= tc.opt.MinWidth && q.oh >= tc.opt.MinHeight {
					t.Errorf("%+v: scale %d/8 would do", tc.opt, n)
				}
			}
		}
		if p.scale < 8 && (p.ow < tc.opt.MinWidth || p.oh < tc.opt.MinHeight) {
			t.Errorf("%+v: output %dx%d below the minimum", tc.opt, p.ow, p.oh)
		}
	}
	if _, err := makePlan(info, Options{ROI: Rect{0, 0, 501, 10}}, true); err == nil {
		t.Error("ROI wider than the image accepted")
	}
	if _, err := makePlan(info, Options{AdjustOrientation: true, ROI: Rect{0, 0, 376, 10}}, true); err == nil {
		t.Error("ROI wider than the upright image accepted")
	}
}

// TestJPEGNoAllocs: steady-state JPEG decoding (full, and ROI + scaling + orientation)
// allocates nothing.
func TestJPEGNoAllocs(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	data := withOrientation(readFile(t, filepath.Join(corpusDir, "pillow/flower.jpg")), 6, false)
	for _, opt := range []Options{
		{Out: RGB},
		{Out: RGB, AdjustOrientation: true, ROI: Rect{20, 30, 300, 200}, MinWidth: 100, MinHeight: 100, MaxPixels: 1 << 30},
		{Out: Gray, AdjustOrientation: true, ROI: Rect{1, 2, 77, 99}},
	} {
		info, err := d.Probe(data)
		if err != nil {
			t.Fatal(err)
		}
		w, h, c, err := d.OutputSize(data, info, opt)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, w*h*c)
		allocs := testing.AllocsPerRun(20, func() {
			info, err := d.Probe(data)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := d.Decode(data, info, opt, dst); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%+v: %.1f allocations per Probe+Decode", opt, allocs)
		}
	}
}

// repeatLastScan returns a progressive JPEG with its last scan (SOS header and entropy
// data) repeated n more times before EOI.
func repeatLastScan(t *testing.T, jpg []byte, n int) []byte {
	t.Helper()
	sos := -1
	for i := 2; i+3 < len(jpg); {
		if jpg[i] != 0xFF {
			t.Fatal("unexpected marker layout")
		}
		m := jpg[i+1]
		if m == 0xD9 {
			break
		}
		if m == 0xDA {
			sos = i
			// Skip the entropy data to the next real marker.
			j := i + 2 + int(binary.BigEndian.Uint16(jpg[i+2:]))
			for j+1 < len(jpg) && !(jpg[j] == 0xFF && jpg[j+1] != 0 && (jpg[j+1] < 0xD0 || jpg[j+1] > 0xD7)) {
				j++
			}
			if jpg[j+1] == 0xD9 {
				out := append([]byte{}, jpg[:j]...)
				for range n {
					out = append(out, jpg[sos:j]...)
				}
				return append(out, jpg[j:]...)
			}
			i = j
			continue
		}
		i += 2 + int(binary.BigEndian.Uint16(jpg[i+2:]))
	}
	t.Fatal("no final scan found")
	return nil
}

// TestScanLimit: a progressive JPEG with more than 1000 scans is refused (its decoding
// time grows with scans x image size); one with a few hundred still decodes.
func TestScanLimit(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	base := readFile(t, filepath.Join(corpusDir, "pillow/app13-multiple.jpg"))
	if _, _, _, _, _, err := decodeAll(d, repeatLastScan(t, base, 300), Options{Out: RGB}); err != nil {
		t.Errorf("300 extra scans: %v", err)
	}
	_, _, _, _, _, err := decodeAll(d, repeatLastScan(t, base, 1100), Options{Out: RGB})
	if err == nil || err.Error() != "JPEG: more than 1000 scans (a decompression bomb?)" {
		t.Errorf("1100 extra scans: %v", err)
	}
	// The decoder is still usable afterwards.
	if _, _, _, _, _, err := decodeAll(d, base, Options{Out: RGB}); err != nil {
		t.Errorf("after the refusal: %v", err)
	}
}
