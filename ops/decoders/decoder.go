package decoders

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
	"github.com/godali/godali/ops/internal/window"
)

var decoderArgs = []engine.ArgSpec{
	{Name: "output_type", Type: engine.ArgImageType, Default: "RGB", Doc: "color space of the output: RGB, BGR, GRAY, YCbCr (ITU-R BT.601 limited range of the RGB decode, as color_space_conversion; cpu only) or ANY_DATA (cpu only: one channel for grey images, three for others; images with alpha refused) (a JPEG's GRAY is its luma as libjpeg decodes it, as DALI gives it; other images' the ITU-R 601 luma of RGB)"},
	{Name: "adjust_orientation", Type: engine.ArgBool, Default: true, Doc: "apply the EXIF orientation"},
	{Name: "like_pil", Type: engine.ArgBool, Default: false, Doc: "godali only: decode as torchvision's default loader (PIL's Image.open + convert) does: the EXIF orientation only where PIL's open applies it (TIFF), whatever adjust_orientation says, 16-bit grey clipped to 255 where the default scales it, colours converted as PIL converts them (a JPEG's GRAY the 601 luma of its RGB decode, convert(\"L\"), rather than its stored luma; CMYK rounded), and image_random_crop's window drawn as torchvision's RandomResizedCrop draws it (centre-crop fallback) rather than as DALI's generator"},
	{Name: "dtype", Type: engine.ArgDType, Default: "UINT8", Doc: "output type: UINT8, or (cpu) UINT16, INT16 or FLOAT with the pixels converted to the type's dynamic range as DALI converts them (x * 65535/255 or x * 32767/255 rounded, x / 255); 16-bit PNG and TIFF samples keep their 16 bits (x, x * 32767/65535 rounded, x / 65535), but for GRAY of a colour image (decoded at 8 bits) and like_pil"},
	{Name: "hw_decoder_load", Type: engine.ArgFloat, Default: 0.65, Doc: "mixed: share of JPEGs sent to the GPU's hardware decoder"},
	{Name: "preallocate_width_hint", Type: engine.ArgInt, Default: 0, Doc: "mixed: expected maximum width, to preallocate"},
	{Name: "preallocate_height_hint", Type: engine.ArgInt, Default: 0, Doc: "mixed: expected maximum height, to preallocate"},
	{Name: "device_memory_padding", Type: engine.ArgInt, Default: 16 << 20, Doc: "mixed: device buffer padding in bytes"},
	{Name: "host_memory_padding", Type: engine.ArgInt, Default: 8 << 20, Doc: "mixed: pinned host buffer padding in bytes"},
	{Name: "use_fast_idct", Type: engine.ArgBool, Default: false, Doc: "use libjpeg-turbo's fast integer IDCT: quicker, slightly less accurate"},
	{Name: "jpeg_fancy_upsampling", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; fancy upsampling is always on (matches PIL)"},
	{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
	{Name: "memory_stats", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility (DALI's mixed decoder prints its allocation statistics); godali prints nothing"},
}

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.image",
		Doc: "Decodes images (JPEG with libjpeg-turbo; PNG, BMP, TIFF, WebP, PNM, GIF) to HWC uint8. " +
			"The format comes from the content, not the file name.",
		Backends:  map[string]engine.BackendFacts{"mixed": {Doc: "nvJPEG (hardware decoder where the GPU has one); formats nvJPEG lacks decode on the CPU and are uploaded"}},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, Args: decoderArgs,
	})
	engine.RegisterBackend("decoders.image", "cpu", func(a *engine.Args) (engine.Operator, error) { return newCPUDecoder(a, false) })
}

// dctScaleMargin: DCT-domain downscaling may shrink the decoded region down to this many
// times what the consumer produces from it, never further, so that the consumer's
// antialiased resize still averages the DCT scaling's differences away (the result stays
// within DALI's tolerance of PIL's decode + resize).
const dctScaleMargin = 2

type cpuDecoder struct {
	args     *engine.Args
	dtype    engine.DType // the output's (decodedTypes)
	out      codec.OutputType
	ycc      bool // output_type YCbCr: out is RGB, converted after decoding (toYCbCr)
	anyData  bool // output_type ANY_DATA: each image's own channels (anyDataOut)
	orient   bool
	likePIL  bool // orientation and 16-bit grey as PIL's loader (like_pil)
	dctScale bool // DCT-domain downscaling allowed (dct_downscale)
	fastIDCT bool
	crop     *window.RandomCrop
	consumer engine.SizeHinter
	// reader is a consumer that reads only a window of the image (a resize fused with a
	// centre crop): a JPEG decodes just that window, in place (codec.Options.Embed).
	reader engine.WindowReader
}

type decoderState struct {
	dec  *codec.Decoder
	info codec.Info
	opt  codec.Options
	u8   []byte // the decoded pixels when the output's type is not uint8
	lo   []byte // their low bytes, for 16-bit images (cpuDecoder.sixteen)
	win  any    // the reader's InputWindow scratch
}

func (s *decoderState) Close() { s.dec.Close() }

// Trim gives back the decoder's scratch and C memory grown above limit.
func (s *decoderState) Trim(limit int) {
	s.dec.Trim(limit)
	if cap(s.u8) > limit {
		s.u8 = nil
	}
	if cap(s.lo) > limit {
		s.lo = nil
	}
}

// ScratchBytes is the decoder's scratch now held (tests of the memory bound read it).
func (s *decoderState) ScratchBytes() int { return s.dec.ScratchBytes() }

func newCPUDecoder(a *engine.Args, randomCrop bool) (engine.Operator, error) {
	it, err := codec.ParseImageType(a.String("output_type"))
	if err != nil {
		return nil, a.Errorf("output_type", "%v", err)
	}
	dt := a.DType("dtype")
	if !slices.Contains(decodedTypes, dt) {
		return nil, a.Errorf("dtype", "expected UINT8, UINT16, INT16 or FLOAT, got %s", dt)
	}
	d := &cpuDecoder{args: a, dtype: dt, out: it.Out, ycc: it.YCbCr, anyData: it.AnyData, orient: a.Bool("adjust_orientation"), likePIL: a.Bool("like_pil"), fastIDCT: a.Bool("use_fast_idct")}
	if randomCrop {
		d.dctScale = a.Bool("dct_downscale")
		rc, err := window.ParseRandomCrop(a)
		if err != nil {
			return nil, err
		}
		rc.DALI = !d.likePIL // DALI's window draws; like_pil: torchvision's (godali.torch)
		d.crop = rc
	}
	return d, nil
}

func (d *cpuDecoder) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in[0].DType != engine.UInt8 || (in[0].Shape != nil && len(in[0].Shape) != 1) { // unknown rank (readers.caffe: encoded or raw): checked per sample
		return nil, d.args.Invalidf("input must be encoded bytes (uint8, 1-D), e.g. from readers.file; got %s %v", in[0].DType, in[0].Shape)
	}
	c := d.out.Channels()
	if d.anyData {
		c = -1 // the image's own
	}
	return []engine.TensorMeta{{DType: d.dtype, Layout: "HWC", Shape: []int{-1, -1, c}}}, nil
}

// anyDataOut is output_type ANY_DATA's layout for an image, as DALI 2.4's CPU decoders
// give it (tests/compat/decsweep.py): one channel for grey images (8- and 16-bit PNG
// and TIFF, 1-bit PNG, grey JPEG), three for the others (colour, palette, CMYK: RGB).
// Images with an alpha channel, which DALI gives as four channels (RGBA PNG) or refuses
// (grey+alpha PNG), are refused.
func anyDataOut(info codec.Info) (codec.OutputType, error) {
	switch info.ColorSpace {
	case "Gray":
		return codec.Gray, nil
	case "RGBA", "GrayA", "YCbCrA":
		return codec.RGB, fmt.Errorf("output_type ANY_DATA of a %s image with an alpha channel is not supported (decode it as RGB, which drops the alpha)", info.Format)
	}
	return codec.RGB, nil
}

// toYCbCr converts the RGB pixels px in place to YCbCr where the output type is YCbCr.
func (d *cpuDecoder) toYCbCr(px []byte) {
	if d.ycc {
		imaging.RGBToYCbCr601U8(px)
	}
}

// decodedTypes are the output types of the CPU decoders (dtype): uint8 as decoded, or
// converted to another type's dynamic range (convertNorm).
var decodedTypes = []engine.DType{engine.UInt8, engine.UInt16, engine.Int16, engine.Float32}

// uint8Only refuses a dtype other than UINT8 for the decoders that write the pixels
// themselves (the mixed decoder, decoders.image_slice).
func uint8Only(a *engine.Args, where string) error {
	if dt := a.DType("dtype"); dt != engine.UInt8 {
		return a.Errorf("dtype", "%s decodes to UINT8 only, got %s", where, dt)
	}
	return nil
}

// convertNorm writes the uint8 pixels src into dst as dtype, keeping the dynamic range as
// DALI's ConvertSatNorm does: integers scaled by max(dtype)/255 in float32 and rounded,
// floats divided by 255.
func convertNorm(dst []byte, dtype engine.DType, src []byte) {
	switch dtype {
	case engine.UInt16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(v)*257)
		}
	case engine.Int16:
		const k = float32(32767) / 255
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(int16(math.Round(float64(float32(v)*k)))))
		}
	case engine.Float32:
		const k = float32(1) / 255
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(float32(v)*k))
		}
	}
}

// convertNorm16 writes the 16-bit samples hi<<8 | lo into dst as dtype, as DALI's
// ConvertSatNorm from uint16 does: UINT16 as they are, UINT8 divided by 257 and rounded,
// INT16 scaled by 32767/65535 and rounded, FLOAT divided by 65535.
func convertNorm16(dst []byte, dtype engine.DType, hi, lo []byte) {
	for i := range hi {
		v := uint16(hi[i])<<8 | uint16(lo[i])
		switch dtype {
		case engine.UInt8:
			dst[i] = byte((uint32(v) + 128) / 257) // v / 257 is never a half
		case engine.UInt16:
			binary.LittleEndian.PutUint16(dst[2*i:], v)
		case engine.Int16:
			const k = float32(32767) / 65535
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(int16(math.Round(float64(float32(v)*k)))))
		case engine.Float32:
			const k = float32(1) / 65535
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(float32(v)*k))
		}
	}
}

// SetConsumer remembers a consumer that shrinks the image, to decode no larger than it
// needs. Only the random-crop decoder scales in the DCT domain: decoders.image stays
// bit-exact with PIL's full decode (validation pipelines compare against it), while
// training crops, random anyway, take the speed. decoders.image decodes only the window
// a consumer reads (engine.WindowReader), which changes none of the consumer's output.
func (d *cpuDecoder) SetConsumer(c engine.Operator) {
	if h, ok := c.(engine.SizeHinter); ok && d.crop != nil && d.dctScale {
		d.consumer = h
	}
	if r, ok := c.(engine.WindowReader); ok && d.crop == nil {
		d.reader = r
	}
}

func (d *cpuDecoder) NewWorkerState() any { return &decoderState{dec: codec.NewDecoder()} }

// ProbeImage reads an encoded image's header for the pipeline's preallocation scan
// (engine.ImageProber): the whole image in the output type is the most a sample's output
// can hold (a crop, DCT scaling or orientation give as many bytes or fewer).
func (d *cpuDecoder) ProbeImage(head []byte) (engine.ImageHeader, error) {
	dec := codec.NewDecoder()
	defer dec.Close()
	info, err := dec.Probe(head)
	if err != nil {
		return engine.ImageHeader{}, err
	}
	px := int64(info.Width) * int64(info.Height)
	if d.crop != nil {
		px = d.cropPixels(info)
	}
	return engine.ImageHeader{Width: info.Width, Height: info.Height,
		OutBytes: px * int64(d.out.Channels()) * int64(d.dtype.Size()), WorkBytes: codec.WorkBytes(info, d.out.Channels())}, nil
}

// probe reads the header of the sample's encoded image into st (info and the decode
// options), refuses images over max_image_pixels, and returns the displayed size (width
// and height swapped when the EXIF orientation transposes the image and it is applied).
func (d *cpuDecoder) probe(ws *engine.Workspace, st *decoderState) (w, h int, err error) {
	if len(ws.In[0].Shape) != 1 {
		return 0, 0, d.args.DataErrorf(ws, "input must be encoded bytes (1-D), got shape %v (a raw image?)", ws.In[0].Shape)
	}
	info, err := st.dec.Probe(ws.In[0].Data)
	if err != nil {
		return 0, 0, err
	}
	st.info = info
	out := d.out
	if d.anyData {
		if out, err = anyDataOut(info); err != nil {
			return 0, 0, d.args.DataErrorf(ws, "%v", err)
		}
	}
	orient := d.orients(info)
	st.opt = codec.Options{Out: out, AdjustOrientation: orient, ClipGray16: d.likePIL, DALIColor: !d.likePIL, MaxPixels: ws.Limits.MaxImagePixels, FastIDCT: d.fastIDCT}
	if ws.Limits.MaxImagePixels > 0 && int64(info.Width)*int64(info.Height) > ws.Limits.MaxImagePixels {
		return 0, 0, engine.Errorf(engine.StatusData, "image is %dx%d = %d pixels, more than max_image_pixels=%d (decompression bomb?)", info.Width, info.Height, int64(info.Width)*int64(info.Height), ws.Limits.MaxImagePixels)
	}
	w, h = info.Width, info.Height
	if orient && info.Orientation >= 5 {
		w, h = h, w
	}
	return w, h, nil
}

// orients reports whether the image's EXIF orientation is applied: adjust_orientation,
// or with like_pil only where PIL's Image.open applies it itself (TIFF, whose loader
// transposes on load; JPEG, PNG and WebP come out as stored).
func (d *cpuDecoder) orients(info codec.Info) bool {
	if d.likePIL {
		return info.Format == codec.FormatTIFF
	}
	return d.orient
}

func (d *cpuDecoder) Setup(ws *engine.Workspace) error {
	st := ws.State.(*decoderState)
	w, h, err := d.probe(ws, st)
	if err != nil {
		return err
	}
	data, info := ws.In[0].Data, st.info
	rw, rh := w, h
	if d.crop != nil {
		st.opt.ROI = d.crop.Window(w, h, ws.RNG)
		rw, rh = st.opt.ROI.W, st.opt.ROI.H
	}
	if d.reader != nil && info.Format == codec.FormatJPEG && !info.Progressive { // codec.Options.Embed decodes those whole
		d.readWindow(st, w, h)
	}
	if d.consumer != nil {
		tw, th := d.consumer.OutputSizeFor(rw, rh)
		if tw > 0 && th > 0 && rw >= dctScaleMargin*tw && rh >= dctScaleMargin*th {
			st.opt.MinWidth, st.opt.MinHeight = dctScaleMargin*tw, dctScaleMargin*th
		}
	}
	ow, oh, oc, err := st.dec.OutputSize(data, info, st.opt)
	if err != nil {
		return err
	}
	ws.Out[0].SetShape(oh, ow, oc)
	return nil
}

// readWindow sets st.opt to decode only the window of the w x h (oriented) image that
// the consumer reads, in place in the whole image's output, when that is less than
// the whole image.
func (d *cpuDecoder) readWindow(st *decoderState, w, h int) {
	if st.win == nil {
		st.win = d.reader.NewWindowState()
	}
	x0, y0, x1, y1, ok := d.reader.InputWindow(w, h, st.win)
	if !ok || x0 < 0 || y0 < 0 || x1 > w || y1 > h || x0 >= x1 || y0 >= y1 || (x1-x0 == w && y1-y0 == h) {
		return
	}
	st.opt.ROI, st.opt.Embed = codec.Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}, true
}

func (d *cpuDecoder) Run(ws *engine.Workspace) error {
	st := ws.State.(*decoderState)
	return d.decodeTo(st, ws.In[0].Data, st.opt, ws.Out[0].Data, d.dtype)
}

// decodeTo decodes the sample data (st.info, opt) into out as dtype: the uint8 decode
// converted (YCbCr, the type's range), or a 16-bit image's samples (sixteen) converted.
func (d *cpuDecoder) decodeTo(st *decoderState, data []byte, opt codec.Options, out []byte, dtype engine.DType) error {
	dst := out
	six := d.sixteen(st.info, opt.Out)
	if dtype != engine.UInt8 || six {
		n := len(out) / dtype.Size()
		if cap(st.u8) < n {
			st.u8 = make([]byte, n)
		}
		dst = st.u8[:n]
	}
	if six {
		// 16-bit samples at full precision: their low bytes from the same decode
		if cap(st.lo) < len(dst) {
			st.lo = make([]byte, len(dst))
		}
		opt.Low16 = st.lo[:len(dst)]
	}
	if _, _, _, err := st.dec.Decode(data, st.info, opt, dst); err != nil {
		return err
	}
	if six {
		convertNorm16(out, dtype, dst, opt.Low16)
		return nil
	}
	d.toYCbCr(dst)
	if dtype != engine.UInt8 {
		convertNorm(out, dtype, dst)
	}
	return nil
}

// sixteen reports whether the output is converted from the image's 16-bit samples, as
// DALI's decoders convert it (a 16-bit PNG's UINT16 output is its samples, its UINT8
// output the samples / 257 rounded), rather than from the 8-bit decode (their high
// bytes): for 16-bit images whose conversion to the output copies samples (RGB, BGR, or
// GRAY of a grey image; GRAY of 16-bit colour goes through the 8-bit decode). like_pil
// keeps PIL's 8-bit view.
func (d *cpuDecoder) sixteen(info codec.Info, out codec.OutputType) bool {
	return info.Sixteen && !d.likePIL && !d.ycc && (out != codec.Gray || info.ColorSpace == "Gray")
}
