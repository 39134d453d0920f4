package image

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "color_space_conversion",
		Doc: "Converts HWC uint8 or float images between RGB, BGR, GRAY and YCbCr as DALI does: " +
			"GRAY = 0.299 R + 0.587 G + 0.114 B (full range); YCbCr is ITU-R BT.601 with Y in " +
			"16..235 (Y = (65.481 R + 128.553 G + 24.966 B) / 255 + 16, Cb = (-37.797 R - 74.203 G + 112 B) / 255 + 128, " +
			"Cr = (112 R - 93.786 G - 18.214 B) / 255 + 128, as DALI 2.4's CPU conversion; back: 1.164 (Y - 16) + 1.596 Cr' etc.). Float " +
			"images are in 0..1 (offsets 16/256 and 0.5), computed in float32; uint8 rounded and " +
			"saturated. The output type is the input's.",
		Sequences: engine.PerFrame,
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8OrFloat,
		Args: []engine.ArgSpec{
			{Name: "image_type", Type: engine.ArgImageType, Required: true, Doc: "color space of the input: RGB, BGR, GRAY or YCbCr"},
			{Name: "output_type", Type: engine.ArgImageType, Required: true, Doc: "color space of the output: RGB, BGR, GRAY or YCbCr"},
		},
	})
	engine.RegisterBackend("color_space_conversion", "cpu", func(a *engine.Args) (engine.Operator, error) {
		from, err := parseColorSpace(a, "image_type")
		if err != nil {
			return nil, err
		}
		to, err := parseColorSpace(a, "output_type")
		if err != nil {
			return nil, err
		}
		return &colorSpaceOp{args: a, from: from, to: to}, nil
	})
}

type colorSpace int

const (
	spaceRGB colorSpace = iota
	spaceBGR
	spaceGray
	spaceYCbCr
)

func (c colorSpace) channels() int {
	if c == spaceGray {
		return 1
	}
	return 3
}

func parseColorSpace(a *engine.Args, name string) (colorSpace, error) {
	switch s := strings.TrimPrefix(strings.TrimPrefix(a.String(name), "types."), "DALIImageType."); s {
	case "RGB":
		return spaceRGB, nil
	case "BGR":
		return spaceBGR, nil
	case "GRAY":
		return spaceGray, nil
	case "YCbCr":
		return spaceYCbCr, nil
	default:
		return 0, a.Errorf(name, "expected RGB, BGR, GRAY or YCbCr, got %q", s)
	}
}

type colorSpaceOp struct {
	args     *engine.Args
	from, to colorSpace
}

func (o *colorSpaceOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if c := m.Shape[2]; c >= 0 && c != o.from.channels() {
		return nil, o.args.Invalidf("image_type %s needs %d channels, the input has %d", o.args.String("image_type"), o.from.channels(), c)
	}
	return []engine.TensorMeta{{DType: m.DType, Layout: "HWC", Shape: []int{m.Shape[0], m.Shape[1], o.to.channels()}}}, nil
}

func (o *colorSpaceOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	if in.Shape[2] != o.from.channels() {
		return o.args.DataErrorf(ws, "image_type %s needs %d channels, got shape %v", o.args.String("image_type"), o.from.channels(), in.Shape)
	}
	ws.Out[0].SetShape(in.Shape[0], in.Shape[1], o.to.channels())
	return nil
}

// BT.601 (16..235) and full-range gray coefficients, as DALI's kernels use them.
const (
	bt601YSum = float32(0.257) + float32(0.504) + float32(0.098)
)

// convertPixel converts one pixel p (in the input's units: 0..255 or 0..1, unit = 255 or 1)
// into q, in float32.
func (o *colorSpaceOp) convertPixel(p []float32, q []float32, unit float32) int {
	off16, off128 := 16*unit/255, 128*unit/255
	if unit == 1 {
		off16, off128 = 0.0625, 0.5
	}
	if o.from == o.to {
		copy(q, p[:o.from.channels()])
		return o.to.channels()
	}
	// gray <-> YCbCr directly (DALI's y_to_gray / gray_to_y), not through RGB.
	switch {
	case o.from == spaceGray && o.to == spaceYCbCr:
		q[0], q[1], q[2] = float32(p[0]*bt601YSum)+off16, off128, off128
		return 3
	case o.from == spaceYCbCr && o.to == spaceGray:
		q[0] = (p[0] - off16) * (1 / bt601YSum)
		return 1
	}
	var r, g, b float32
	switch o.from {
	case spaceRGB:
		r, g, b = p[0], p[1], p[2]
	case spaceBGR:
		r, g, b = p[2], p[1], p[0]
	case spaceGray:
		r, g, b = p[0], p[0], p[0]
	case spaceYCbCr:
		y := 1.164 * (p[0] - off16)
		cb, cr := p[1]-off128, p[2]-off128
		r = y + 1.596*cr
		g = y - 0.813*cr - 0.392*cb
		b = y + 2.017*cb
	}
	switch o.to {
	case spaceRGB:
		q[0], q[1], q[2] = r, g, b
	case spaceBGR:
		q[0], q[1], q[2] = b, g, r
	case spaceGray:
		q[0] = 0.299*r + 0.587*g + 0.114*b
		return 1
	case spaceYCbCr:
		q[0], q[1], q[2] = imaging.RGBToYCbCr601(r, g, b, off16, off128)
	}
	return 3
}

func (o *colorSpaceOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	n := in.Shape[0] * in.Shape[1]
	ci, co := o.from.channels(), o.to.channels()
	var p, q [3]float32
	if in.DType == engine.UInt8 {
		for i := 0; i < n; i++ {
			for c := 0; c < ci; c++ {
				p[c] = float32(in.Data[i*ci+c])
			}
			o.convertPixel(p[:], q[:], 255)
			for c := 0; c < co; c++ {
				out.Data[i*co+c] = imaging.SatU8(q[c])
			}
		}
		return nil
	}
	for i := 0; i < n; i++ {
		for c := 0; c < ci; c++ {
			p[c] = math.Float32frombits(binary.LittleEndian.Uint32(in.Data[4*(i*ci+c):]))
		}
		o.convertPixel(p[:], q[:], 1)
		for c := 0; c < co; c++ {
			binary.LittleEndian.PutUint32(out.Data[4*(i*co+c):], math.Float32bits(q[c]))
		}
	}
	return nil
}
