package image

import (
	"encoding/binary"
	"fmt"

	"github.com/godali/godali/engine"
)

func init() {
	// DALI 2.4 names the operator debayer; experimental.debayer is its former name.
	registerDebayer("debayer")
	engine.RegisterVariant("experimental.debayer", "debayer", "DALI's former name of debayer. ")
}

func registerDebayer(name string) {
	engine.RegisterSchema(&engine.Schema{
		Name: name,
		Doc: "Demosaics single-channel Bayer images into RGB, as DALI's fn." + name + " on the CPU " +
			"(OpenCV's bilinear Bayer->RGB conversion, cv2.COLOR_Bayer*2RGB): a missing green is the mean of " +
			"the 4 horizontal and vertical neighbours, a missing red or blue the mean of the 2 neighbours " +
			"of that colour (green sites) or of the 4 diagonal ones, rounded half up; the first and last " +
			"rows and columns repeat their inner neighbours. Input UINT8 or UINT16, HW, HWC with 1 channel " +
			"or a sequence FHW / FHWC, height and width even; the output is HWC (FHWC) with 3 channels.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		InputLayouts: []string{"HW", "HWC", "FHW", "FHWC"},
		InputDtypes:  []engine.DType{engine.UInt8, engine.UInt16}, InputDoc: "raw sensor data, one channel",
		Args: []engine.ArgSpec{
			{Name: "blue_position", Type: engine.ArgIntList, Required: true, TensorInput: true,
				Doc: "(y, x) of blue in the 2x2 Bayer tile that starts at the second row and column (OpenCV's " +
					"convention): (0, 0) BGGR/BG, (0, 1) GBRG/GB, (1, 0) GRBG/GR, (1, 1) RGGB/RG; may come per sample"},
			{Name: "algorithm", Type: engine.ArgString,
				Doc: "demosaicing algorithm: bilinear_ocv (the default on the CPU, as DALI's) or gray_ocv (the luma of " +
					"the bilinear estimates, one channel: cv2.COLOR_Bayer*2GRAY) or edgeaware_ocv (green at a red or blue " +
					"site from the pair of neighbours that differ less: cv2.COLOR_Bayer*2RGB_EA); DALI's GPU default_npp " +
					"is refused on the CPU, as DALI does; DALI's vng_ocv is not implemented"},
		},
	})
	engine.RegisterBackend(name, "cpu", newDebayer)
}

func newDebayer(a *engine.Args) (engine.Operator, error) {
	o := &debayerOp{args: a, ch: 3}
	switch alg := a.String("algorithm"); alg {
	case "", "bilinear_ocv":
	case "gray_ocv":
		o.ch = 1
	case "edgeaware_ocv":
		o.edgeAware = true
	case "default_npp":
		return nil, a.Errorf("algorithm", "default_npp is DALI's GPU algorithm; on the CPU use bilinear_ocv")
	case "vng_ocv":
		return nil, a.Errorf("algorithm", "%q is not implemented in godali: use bilinear_ocv", alg)
	default:
		return nil, a.Errorf("algorithm", "unknown algorithm %q: expected bilinear_ocv, edgeaware_ocv, vng_ocv or gray_ocv", alg)
	}
	if !a.AnyPerSample("blue_position") {
		if _, err := bluePosition(a.Ints("blue_position")); err != "" {
			return nil, a.Errorf("blue_position", "%s", err)
		}
	}
	return o, nil
}

// bluePosition checks a (y, x) position in the 2x2 tile.
func bluePosition[T int | int64](v []T) ([2]int, string) {
	if len(v) != 2 || v[0] < 0 || v[0] > 1 || v[1] < 0 || v[1] > 1 {
		return [2]int{}, fmt.Sprintf("expected two values, each 0 or 1, got %v", v)
	}
	return [2]int{int(v[0]), int(v[1])}, ""
}

type debayerOp struct {
	args *engine.Args
	seq  bool
	ch   int // output channels: 3 (RGB), 1 (gray_ocv)
	// edgeAware: edgeaware_ocv (green along the smoother direction)
	edgeAware bool
}

type debayerState struct {
	bp  []int
	src []int32
	dst []int32
}

func (o *debayerOp) NewWorkerState() any { return &debayerState{} }

func (o *debayerOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	layout := m.Layout
	if layout == "" {
		layout = "HWC"[:len(m.Shape)]
	}
	o.seq = layout[0] == 'F'
	if layout[len(layout)-1] == 'C' && m.Shape[len(m.Shape)-1] > 1 {
		return nil, o.args.Invalidf("input %s %v must have 1 channel (raw sensor data)", layout, m.Shape)
	}
	out := engine.TensorMeta{DType: m.DType, Layout: "HWC", Shape: []int{m.Shape[0], m.Shape[1], o.ch}}
	if o.seq {
		out.Layout, out.Shape = "FHWC", []int{m.Shape[0], m.Shape[1], m.Shape[2], 3}
	}
	return []engine.TensorMeta{out}, nil
}

// frameShape is (frames, height, width) of a sample.
func (o *debayerOp) frameShape(sh []int) (f, h, w int) {
	if o.seq {
		return sh[0], sh[1], sh[2]
	}
	return 1, sh[0], sh[1]
}

func (o *debayerOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	f, h, w := o.frameShape(in.Shape)
	if len(in.Shape) == 3+btoi(o.seq) && in.Shape[len(in.Shape)-1] != 1 {
		return o.args.DataErrorf(ws, "input %v must have 1 channel (raw sensor data)", in.Shape)
	}
	if h%2 != 0 || w%2 != 0 {
		return o.args.DataErrorf(ws, "The height and width of the image to debayer must be even, got %d x %d", h, w)
	}
	if o.seq {
		out.SetShape(f, h, w, o.ch)
		out.Layout = "FHWC"
	} else {
		out.SetShape(h, w, o.ch)
		out.Layout = "HWC"
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (o *debayerOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*debayerState)
	v, err := o.args.IntsAt(ws, "blue_position", st.bp)
	if err != nil {
		return err
	}
	st.bp = v
	bp, msg := bluePosition(v)
	if msg != "" {
		return o.args.ArgDataErrorf(ws, "blue_position", "%s", msg)
	}
	in, out := ws.In[0], ws.Out[0]
	f, h, w := o.frameShape(in.Shape)
	n := h * w
	on := o.ch * n // output values per frame
	st.src, st.dst = growI32(st.src, n), growI32(st.dst, on)
	wide := in.DType == engine.UInt16
	for fr := 0; fr < f; fr++ {
		if wide {
			b := in.Data[fr*n*2:]
			for i := range st.src {
				st.src[i] = int32(binary.LittleEndian.Uint16(b[2*i:]))
			}
		} else {
			for i, x := range in.Data[fr*n : fr*n+n] {
				st.src[i] = int32(x)
			}
		}
		if o.ch == 1 {
			DebayerGray(st.dst, st.src, h, w, bp)
		} else if o.edgeAware {
			DebayerEdgeAware(st.dst, st.src, h, w, bp)
		} else {
			DebayerBilinear(st.dst, st.src, h, w, bp)
		}
		if wide {
			b := out.Data[fr*on*2:]
			for i, x := range st.dst {
				binary.LittleEndian.PutUint16(b[2*i:], uint16(x))
			}
		} else {
			b := out.Data[fr*on:]
			for i, x := range st.dst {
				b[i] = uint8(x)
			}
		}
	}
	return nil
}

func growI32(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

// DebayerBilinear writes the RGB image (h x w x 3) of the Bayer mosaic src (h x w) into
// dst, as OpenCV's bilinear Bayer->RGB: inner pixels average their neighbours of the
// missing colours, rounded half up; the border rows and columns copy their inner
// neighbours (an image without inner pixels, h or w of 2, is left zero, as OpenCV's).
// bp is blue's (y, x) in the tile at (1, 1).
func DebayerBilinear(dst, src []int32, h, w int, bp [2]int) {
	clear(dst[:3*h*w])
	by, bx := (bp[0]+1)%2, (bp[1]+1)%2 // the parity of blue sites
	for y := 1; y < h-1; y++ {
		up, row, dn := src[(y-1)*w:y*w], src[y*w:(y+1)*w], src[(y+1)*w:(y+2)*w]
		d := dst[y*w*3 : (y+1)*w*3]
		blueRow := y%2 == by
		for x := 1; x < w-1; x++ {
			orth := (up[x] + dn[x] + row[x-1] + row[x+1] + 2) >> 2
			diag := (up[x-1] + up[x+1] + dn[x-1] + dn[x+1] + 2) >> 2
			hz := (row[x-1] + row[x+1] + 1) >> 1
			vt := (up[x] + dn[x] + 1) >> 1
			p := d[3*x : 3*x+3]
			blueCol := x%2 == bx
			switch {
			case blueRow && blueCol: // blue site
				p[0], p[1], p[2] = diag, orth, row[x]
			case !blueRow && !blueCol: // red site
				p[0], p[1], p[2] = row[x], orth, diag
			case blueRow: // green between blues: red above and below
				p[0], p[1], p[2] = vt, row[x], hz
			default: // green between reds
				p[0], p[1], p[2] = hz, row[x], vt
			}
		}
		if w > 2 {
			copy(d[:3], d[3:6])
			copy(d[3*(w-1):], d[3*(w-2):3*(w-1)])
		}
	}
	if h > 2 {
		copy(dst[:3*w], dst[3*w:6*w])
		copy(dst[3*w*(h-1):3*w*h], dst[3*w*(h-2):3*w*(h-1)])
	}
}

// Luma weights of OpenCV's Bayer->gray conversion, in 14-bit fixed point.
const (
	bayerR2Y, bayerG2Y, bayerB2Y = 4899, 9617, 1868
)

// DebayerGray writes the luma (h x w) of the Bayer mosaic src into dst, as OpenCV's
// Bayer->gray conversion (cv2.COLOR_Bayer*2GRAY, DALI's gray_ocv): at an inner pixel the
// bilinear estimates of R, G and B weighted 0.299, 0.587, 0.114 in 14-bit fixed point,
// their sums kept whole until one rounding; borders as DebayerBilinear's.
func DebayerGray(dst, src []int32, h, w int, bp [2]int) {
	clear(dst[:h*w])
	by, bx := (bp[0]+1)%2, (bp[1]+1)%2
	for y := 1; y < h-1; y++ {
		up, row, dn := src[(y-1)*w:y*w], src[y*w:(y+1)*w], src[(y+1)*w:(y+2)*w]
		d := dst[y*w : (y+1)*w]
		blueRow := y%2 == by
		for x := 1; x < w-1; x++ {
			blueCol := x%2 == bx
			var v int64
			switch {
			case blueRow == blueCol: // a blue or red site: 4 diagonal, 4 green neighbours
				kc, kd := int64(bayerB2Y), int64(bayerR2Y)
				if !blueRow {
					kc, kd = kd, kc
				}
				diag := int64(up[x-1] + up[x+1] + dn[x-1] + dn[x+1])
				orth := int64(up[x] + dn[x] + row[x-1] + row[x+1])
				v = (diag*kd + orth*bayerG2Y + int64(row[x])*4*kc + 1<<15) >> 16
			default: // green: one colour above and below, the other left and right
				kv, kh := int64(bayerR2Y), int64(bayerB2Y) // blue row: red above and below
				if !blueRow {
					kv, kh = kh, kv
				}
				vt, hz := int64(up[x]+dn[x]), int64(row[x-1]+row[x+1])
				v = (vt*kv + hz*kh + int64(row[x])*2*bayerG2Y + 1<<14) >> 15
			}
			d[x] = int32(v)
		}
		if w > 2 {
			d[0], d[w-1] = d[1], d[w-2]
		}
	}
	if h > 2 {
		copy(dst[:w], dst[w:2*w])
		copy(dst[w*(h-1):w*h], dst[w*(h-2):w*(h-1)])
	}
}

// DebayerEdgeAware is DebayerBilinear with OpenCV's edge-aware green
// (cv2.COLOR_Bayer*2RGB_EA, DALI's edgeaware_ocv): at a red or blue site green is the
// mean of the vertical pair when the horizontal pair differs more, else of the
// horizontal pair; the two-neighbour means round half up, the diagonal mean as
// DebayerBilinear's; borders alike.
func DebayerEdgeAware(dst, src []int32, h, w int, bp [2]int) {
	clear(dst[:3*h*w])
	by, bx := (bp[0]+1)%2, (bp[1]+1)%2
	abs := func(v int32) int32 {
		if v < 0 {
			return -v
		}
		return v
	}
	for y := 1; y < h-1; y++ {
		up, row, dn := src[(y-1)*w:y*w], src[y*w:(y+1)*w], src[(y+1)*w:(y+2)*w]
		d := dst[y*w*3 : (y+1)*w*3]
		blueRow := y%2 == by
		for x := 1; x < w-1; x++ {
			hz := (row[x-1] + row[x+1] + 1) >> 1
			vt := (up[x] + dn[x] + 1) >> 1
			p := d[3*x : 3*x+3]
			blueCol := x%2 == bx
			switch {
			case blueRow == blueCol: // a blue or red site
				g := hz
				if abs(row[x-1]-row[x+1]) > abs(up[x]-dn[x]) {
					g = vt
				}
				diag := (up[x-1] + up[x+1] + dn[x-1] + dn[x+1] + 2) >> 2
				if blueRow {
					p[0], p[1], p[2] = diag, g, row[x]
				} else {
					p[0], p[1], p[2] = row[x], g, diag
				}
			case blueRow: // green between blues: red above and below
				p[0], p[1], p[2] = vt, row[x], hz
			default:
				p[0], p[1], p[2] = hz, row[x], vt
			}
		}
		if w > 2 {
			copy(d[:3], d[3:6])
			copy(d[3*(w-1):], d[3*(w-2):3*(w-1)])
		}
	}
	if h > 2 {
		copy(dst[:3*w], dst[3*w:6*w])
		copy(dst[3*w*(h-1):3*w*h], dst[3*w*(h-2):3*w*(h-1)])
	}
}
