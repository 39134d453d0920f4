package nvjpeg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/codec"
)

const corpus = "../tests/data/corpus"

// TestParseJPEGAgreesWithLibjpeg compares the header facts with what codec's
// libjpeg-turbo binding reports for every JPEG of the corpus.
func TestParseJPEGAgreesWithLibjpeg(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpus, "*", "*.jpg"))
	if len(files) < 40 {
		t.Fatalf("corpus has %d JPEGs; expected the full tests/data/corpus", len(files))
	}
	dec := codec.NewDecoder()
	defer dec.Close()
	compared := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		info, perr := ParseJPEG(data)
		ref, rerr := dec.Probe(data)
		if rerr != nil {
			t.Logf("%s: libjpeg cannot read it (%v); ParseJPEG: %v", name, rerr, perr)
			continue
		}
		if perr != nil {
			t.Errorf("%s: libjpeg reads it, ParseJPEG fails: %v", name, perr)
			continue
		}
		compared++
		if info.Width != ref.Width || info.Height != ref.Height || info.Components != ref.Components {
			t.Errorf("%s: %dx%dx%d, libjpeg %dx%dx%d", name, info.Width, info.Height, info.Components, ref.Width, ref.Height, ref.Components)
		}
		if info.Progressive != ref.Progressive || info.Arithmetic != ref.Arithmetic {
			t.Errorf("%s: progressive %v arithmetic %v, libjpeg %v %v", name, info.Progressive, info.Arithmetic, ref.Progressive, ref.Arithmetic)
		}
		if info.Orientation != ref.Orientation {
			t.Errorf("%s: orientation %d, codec %d", name, info.Orientation, ref.Orientation)
		}
		route, why := info.Route(true)
		if ref.ColorSpace == "CMYK" || ref.ColorSpace == "YCCK" || ref.ColorSpace == "RGB" {
			if route != RouteCPU {
				t.Errorf("%s: %s image routed to %v", name, ref.ColorSpace, route)
			}
		}
		t.Logf("%-40s %4dx%-4d %d comp %-6v sof %02x scan1=%v -> %v %s", name, info.Width, info.Height, info.Components, info.Subsampling, info.SOF, info.SingleScan, route, why)
	}
	if compared < 40 {
		t.Fatalf("only %d files compared", compared)
	}
}

func TestRouteOfKnownFiles(t *testing.T) {
	for _, c := range []struct {
		file   string
		adjust bool
		want   Route
		why    string
	}{
		{"libjpeg-turbo/testorig.jpg", true, RouteHardware, ""},
		{"libjpeg-turbo/testimgari.jpg", true, RouteCPU, "arithmetic"},
		{"libjpeg-turbo/testimgint.jpg", true, RouteHardware, ""},
		{"pillow/junk_jpeg_header.jpg", true, RouteCPU, "extraneous"},
		{"libjpeg-turbo/monkey12.jpg", true, RouteCPU, "12-bit"},
		{"pillow/pil_sample_cmyk.jpg", true, RouteCPU, "CMYK"},
		{"pillow/app13-multiple.jpg", true, RouteCUDA, "progressive"},
		{"pillow/hopper_gray.jpg", true, RouteHardware, ""},
		{"pillow/hopper_orientation_6.jpg", true, RouteCPU, "orientation 6"},
		{"pillow/hopper_orientation_6.jpg", false, RouteHardware, ""},
	} {
		data, err := os.ReadFile(filepath.Join(corpus, c.file))
		if err != nil {
			t.Fatal(err)
		}
		info, err := ParseJPEG(data)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		r, why := info.Route(c.adjust)
		if r != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s (adjust %v): %v %q, want %v %q", c.file, c.adjust, r, why, c.want, c.why)
		}
	}
}

// TestGoEncoderOutputIsHardwareEligible: Go's encoder writes baseline 4:2:0 colour and
// gray images with one interleaved scan, the hardware decoder's bread and butter.
func TestGoEncoderOutputIsHardwareEligible(t *testing.T) {
	rgb := image.NewRGBA(image.Rect(0, 0, 97, 61))
	gray := image.NewGray(image.Rect(0, 0, 33, 17))
	for y := 0; y < 61; y++ {
		for x := 0; x < 97; x++ {
			rgb.Set(x, y, color.RGBA{uint8(x * 2), uint8(y * 4), uint8(x ^ y), 255})
		}
	}
	for _, c := range []struct {
		img  image.Image
		css  Subsampling
		w, h int
	}{{rgb, CSS420, 97, 61}, {gray, CSSGray, 33, 17}} {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, c.img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		info, err := ParseJPEG(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if info.Width != c.w || info.Height != c.h || info.Subsampling != c.css || !info.SingleScan || info.SOF != 0xC0 {
			t.Fatalf("%+v", info)
		}
		if r, why := info.Route(true); r != RouteHardware {
			t.Fatalf("%v: routed to %v (%s)", c.css, r, why)
		}
	}
}

// header builds SOI, an optional Adobe segment, a frame header and a scan header.
func header(sof byte, precision int, sampling [][2]int, scanComps int, adobe int, ids string) []byte {
	b := []byte{0xFF, 0xD8}
	if adobe >= 0 {
		seg := append([]byte("Adobe"), 0, 100, 0, 0, 0, 0, byte(adobe))
		b = append(b, 0xFF, 0xEE)
		b = binary.BigEndian.AppendUint16(b, uint16(len(seg)+2))
		b = append(b, seg...)
	}
	frame := []byte{byte(precision), 0, 10, 0, 20, byte(len(sampling))}
	for i, s := range sampling {
		id := byte(i + 1)
		if ids != "" {
			id = ids[i]
		}
		frame = append(frame, id, byte(s[0]<<4|s[1]), 0)
	}
	b = append(b, 0xFF, sof)
	b = binary.BigEndian.AppendUint16(b, uint16(len(frame)+2))
	b = append(b, frame...)
	scan := []byte{byte(scanComps)}
	for i := 0; i < scanComps; i++ {
		scan = append(scan, byte(i+1), 0)
	}
	scan = append(scan, 0, 63, 0)
	b = append(b, 0xFF, 0xDA)
	b = binary.BigEndian.AppendUint16(b, uint16(len(scan)+2))
	return append(b, scan...)
}

func TestSubsamplingAndRoutes(t *testing.T) {
	one := [2]int{1, 1}
	for _, c := range []struct {
		name  string
		data  []byte
		css   Subsampling
		route Route
	}{
		{"444", header(0xC0, 8, [][2]int{one, one, one}, 3, -1, ""), CSS444, RouteHardware},
		{"444 2x2", header(0xC0, 8, [][2]int{{2, 2}, {2, 2}, {2, 2}}, 3, -1, ""), CSS444, RouteHardware},
		{"422", header(0xC0, 8, [][2]int{{2, 1}, one, one}, 3, -1, ""), CSS422, RouteHardware},
		{"420", header(0xC0, 8, [][2]int{{2, 2}, one, one}, 3, 1, ""), CSS420, RouteHardware},
		{"440", header(0xC0, 8, [][2]int{{1, 2}, one, one}, 3, -1, ""), CSS440, RouteHardware},
		{"411", header(0xC0, 8, [][2]int{{4, 1}, one, one}, 3, -1, ""), CSS411, RouteCUDA},
		{"410", header(0xC0, 8, [][2]int{{4, 2}, one, one}, 3, -1, ""), CSS410, RouteCUDA},
		{"odd", header(0xC0, 8, [][2]int{{3, 1}, {2, 1}, {2, 1}}, 3, -1, ""), CSSUnknown, RouteCPU},
		{"chroma differ", header(0xC0, 8, [][2]int{{2, 2}, {1, 1}, {2, 1}}, 3, -1, ""), CSSUnknown, RouteCPU},
		{"gray", header(0xC0, 8, [][2]int{one}, 1, -1, ""), CSSGray, RouteHardware},
		{"multi-scan", header(0xC0, 8, [][2]int{{2, 2}, one, one}, 1, -1, ""), CSS420, RouteCUDA},
		{"extended", header(0xC1, 8, [][2]int{{2, 2}, one, one}, 3, -1, ""), CSS420, RouteCUDA},
		{"progressive", header(0xC2, 8, [][2]int{{2, 2}, one, one}, 3, -1, ""), CSS420, RouteCUDA},
		{"12-bit", header(0xC1, 12, [][2]int{one, one, one}, 3, -1, ""), CSS444, RouteCPU},
		{"arithmetic", header(0xC9, 8, [][2]int{{2, 2}, one, one}, 3, -1, ""), CSS420, RouteCPU},
		{"lossless", header(0xC3, 8, [][2]int{one, one, one}, 3, -1, ""), CSS444, RouteCPU},
		{"adobe rgb", header(0xC0, 8, [][2]int{one, one, one}, 3, 0, ""), CSS444, RouteCPU},
		{"RGB ids", header(0xC0, 8, [][2]int{one, one, one}, 3, -1, "RGB"), CSS444, RouteCPU},
		{"RGB ids, adobe ycc", header(0xC0, 8, [][2]int{one, one, one}, 3, 1, "RGB"), CSS444, RouteHardware},
		{"cmyk", header(0xC0, 8, [][2]int{one, one, one, one}, 4, 0, ""), CSSUnknown, RouteCPU},
	} {
		info, err := ParseJPEG(c.data)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r, why := info.Route(true)
		if info.Subsampling != c.css || r != c.route {
			t.Errorf("%s: %v -> %v (%s); want %v -> %v", c.name, info.Subsampling, r, why, c.css, c.route)
		}
	}
}

func TestParseJPEGRejectsDamage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpus, "pillow/hopper.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := ParseJPEG(data)
	if err != nil {
		t.Fatal(err)
	}
	// Every prefix either fails cleanly or, once the first scan header is in, parses
	// to the same facts.
	for n := 0; n < len(data); n++ {
		info, err := ParseJPEG(data[:n])
		if err == nil && info != full {
			t.Fatalf("prefix %d parses to %+v, full %+v", n, info, full)
		}
	}
	for _, bad := range [][]byte{nil, {0xFF}, []byte("GIF89a"), {0xFF, 0xD8, 0xFF, 0xD9}, {0xFF, 0xD8, 0x00, 0x00}, {0xFF, 0xD8, 0xFF, 0xDA, 0, 3, 1}} {
		if _, err := ParseJPEG(bad); err == nil {
			t.Errorf("ParseJPEG(%q) succeeded", bad)
		}
	}
}

func TestSplitHardware(t *testing.T) {
	H, C, P := RouteHardware, RouteCUDA, RouteCPU
	for _, c := range []struct {
		in   []Route
		load float64
		want []Route
		kept int
	}{
		{[]Route{H, H, H, H}, 0.65, []Route{H, H, H, C}, 3}, // round(2.6) = 3
		{[]Route{H, P, H, C, H, H}, 0.5, []Route{H, P, H, C, C, C}, 2},
		{[]Route{H, H, H}, 0.5, []Route{H, H, C}, 2}, // round(1.5) = 2, half away from zero
		{[]Route{H, H}, 0, []Route{C, C}, 0},
		{[]Route{H, H}, 1, []Route{H, H}, 2},
		{[]Route{H, H}, 7, []Route{H, H}, 2},
		{[]Route{H, H}, -1, []Route{C, C}, 0},
		{[]Route{P, C}, 0.65, []Route{P, C}, 0},
	} {
		got := append([]Route(nil), c.in...)
		kept := SplitHardware(got, c.load)
		if kept != c.kept || !equalRoutes(got, c.want) {
			t.Errorf("SplitHardware(%v, %v) = %v kept %d; want %v kept %d", c.in, c.load, got, kept, c.want, c.kept)
		}
	}
	// 256 eligible images at DALI's default load: 166 to hardware (0.65 * 256 = 166.4).
	routes := make([]Route, 256)
	if kept := SplitHardware(routes, 0.65); kept != 166 {
		t.Fatalf("kept %d of 256", kept)
	}
}

func equalRoutes(a, b []Route) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStatusErrors(t *testing.T) {
	e := statusErr("nvjpegDecodeBatched", StatusBadJPEG)
	if e.Error() != "nvjpegDecodeBatched failed: NVJPEG_STATUS_BAD_JPEG (3): cannot parse the JPEG stream" {
		t.Fatal(e)
	}
	if statusErr("x", StatusSuccess) != nil {
		t.Fatal("success is an error")
	}
	for s, want := range map[Status]error{StatusBadJPEG: ErrBadJPEG, StatusIncompleteBitstream: ErrBadJPEG,
		StatusJPEGNotSupported: ErrNotSupported, StatusArchMismatch: ErrNotSupported, statusUnavailable: ErrUnavailable} {
		if err := statusErr("x", s); !errors.Is(err, want) {
			t.Errorf("%v is not %v", s.Name(), want)
		}
	}
	if errors.Is(statusErr("x", StatusInternalError), ErrBadJPEG) {
		t.Error("internal error classified as a bad JPEG")
	}
	if Status(42).Name() != "NVJPEG_STATUS(42)" {
		t.Error(Status(42).Name())
	}
}
