package image

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// _auto_aug is the engine half of godali.auto_aug: the Python package builds the policy
// (DALI's augmentation suites and AutoAugment policies) and this operator draws, per
// sample from the node's random stream, which augmentations run with which magnitude, as
// DALI's conditionals do, then applies them in sequence.

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "_auto_aug",
		Doc: "Internal operator of godali.auto_aug: applies an AutoAugment, RandAugment or " +
			"TrivialAugment policy (given as JSON by the Python package) to HWC uint8 images or " +
			"FHWC uint8 videos (every frame of a sample gets the sample's augmentations and " +
			"magnitudes, as DALI's augmentations treat sequences), drawing the augmentations " +
			"and magnitudes per sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true, InputLayouts: []string{"HWC", "FHWC"}, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "policy", Type: engine.ArgString, Required: true, Doc: "the policy, JSON (see autoaug.go)"},
			{Name: "fill_value", Type: engine.ArgFloat, Doc: "fill of the geometric augmentations; default: repeat the edge"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: "INTERP_LINEAR or INTERP_NN for the geometric augmentations"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "seed of the choices (with the epoch and the sample's position); -1: the pipeline's stream"},
			{Name: "magnitude_bin", Type: engine.ArgInt, TensorInput: true, Doc: "rand scheme: the magnitude bin, in place of the policy's m; may come per sample (DALI's augmentation called with a per-sample magnitude_bin)"},
		},
	})
	engine.RegisterBackend("_auto_aug", "cpu", func(a *engine.Args) (engine.Operator, error) { return newAutoAug(a) })
}

// augDef is one augmentation of a policy with its magnitude range: the magnitudes are
// linspace(Lo, Hi, bins), negated half of the time when Negate is set, then mapped by
// Param ("" for the magnitude itself, "shift_enhance" 1+m, "sharpness_shifted" m-1,
// "poster_mask"). Rel translations scale the magnitude by the image's width (translate_x)
// or height (translate_y).
type augDef struct {
	Name   string  `json:"name"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Negate bool    `json:"negate"`
	Param  string  `json:"param"`
	Rel    bool    `json:"rel"`
	// Mags, when given (one per bin), replaces linspace(Lo, Hi, bins): torchvision's
	// float32 tables.
	Mags []float64 `json:"mags,omitempty"`
}

// augStage is one (augmentation, probability, magnitude bin) of a sub-policy; Bin < 0
// for augmentations without a magnitude.
type augStage struct {
	Aug  int
	Prob float64
	Bin  int
}

func (s *augStage) UnmarshalJSON(b []byte) error {
	var v [3]float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("a stage is [augmentation index, probability, magnitude bin]: %v", err)
	}
	s.Aug, s.Prob, s.Bin = int(v[0]), v[1], int(v[2])
	if float64(s.Aug) != v[0] || float64(s.Bin) != v[2] {
		return fmt.Errorf("stage %v: the augmentation index and the bin must be integers", v)
	}
	return nil
}

type augPolicy struct {
	Scheme      string       `json:"scheme"` // "auto", "rand", "trivial"
	Bins        int          `json:"bins"`
	Augs        []augDef     `json:"augs"`
	SubPolicies [][]augStage `json:"sub_policies"` // auto
	N           int          `json:"n"`            // rand
	M           int          `json:"m"`            // rand
	// Torchvision selects torchvision's PIL semantics (godali.torch's translation of
	// T.AutoAugment, T.RandAugment, T.TrivialAugmentWide) where they differ from DALI's:
	// shears as F.affine(shear=degrees(atan(m)), center=[0, 0]) (x' = x - m y),
	// translations truncated to whole pixels (int(magnitude)), ImageEnhance's float32
	// blends with truncation (brightness, color with PIL's L, contrast with the grey
	// int(mean(L) + 0.5), sharpness with ImageFilter.SMOOTH), ImageOps.autocontrast and
	// ImageOps.equalize. RGB images only for the colour augmentations. With
	// INTERP_LINEAR the warps are PIL's Image.transform(BILINEAR) with the matrices
	// torchvision gives PIL (augImage.pilShear, pilRotate; imaging.Warp.PIL).
	Torchvision bool `json:"torchvision"`
}

var augParams = map[string]bool{"": true, "shift_enhance": true, "sharpness_shifted": true, "poster_mask": true}

var augNames = map[string]bool{
	"shear_x": true, "shear_y": true, "translate_x": true, "translate_y": true, "rotate": true,
	"brightness": true, "contrast": true, "color": true, "sharpness": true, "posterize": true,
	"solarize": true, "solarize_add": true, "invert": true, "equalize": true, "auto_contrast": true,
	"identity": true,
}

func (p *augPolicy) check() error {
	if p.Bins < 1 {
		return fmt.Errorf("bins: expected >= 1, got %d", p.Bins)
	}
	if len(p.Augs) == 0 {
		return fmt.Errorf("the policy has no augmentations")
	}
	for i, d := range p.Augs {
		if !augNames[d.Name] {
			return fmt.Errorf("augmentation %d: unknown name %q", i, d.Name)
		}
		if !augParams[d.Param] {
			return fmt.Errorf("augmentation %q: unknown parameter mapping %q", d.Name, d.Param)
		}
		if len(d.Mags) != 0 && len(d.Mags) != p.Bins {
			return fmt.Errorf("augmentation %q: %d magnitudes for %d bins", d.Name, len(d.Mags), p.Bins)
		}
		for _, v := range d.Mags {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("augmentation %q: magnitude %g is not finite", d.Name, v)
			}
		}
		if math.IsNaN(d.Lo) || math.IsInf(d.Lo, 0) || math.IsNaN(d.Hi) || math.IsInf(d.Hi, 0) {
			return fmt.Errorf("augmentation %q: magnitude range [%g, %g] is not finite", d.Name, d.Lo, d.Hi)
		}
		if d.Name == "solarize_add" && (math.Max(math.Abs(d.Lo), math.Abs(d.Hi)) >= 128 || d.Negate) {
			return fmt.Errorf("solarize_add accepts shifts from 0 to 127, got range [%g, %g]", d.Lo, d.Hi)
		}
	}
	switch p.Scheme {
	case "auto":
		if len(p.SubPolicies) == 0 {
			return fmt.Errorf("auto: no sub-policies")
		}
		for i, sp := range p.SubPolicies {
			for _, st := range sp {
				if st.Aug < 0 || st.Aug >= len(p.Augs) {
					return fmt.Errorf("sub-policy %d: augmentation index %d out of range", i, st.Aug)
				}
				if !(st.Prob >= 0 && st.Prob <= 1) {
					return fmt.Errorf("sub-policy %d: probability %g outside [0, 1]", i, st.Prob)
				}
				if st.Bin >= p.Bins {
					return fmt.Errorf("sub-policy %d: magnitude bin %d outside [0, %d]", i, st.Bin, p.Bins-1)
				}
			}
		}
	case "rand":
		if p.N < 0 || p.N > 64 {
			return fmt.Errorf("rand: n must be 0 to 64, got %d", p.N)
		}
		if p.M < 0 || p.M >= p.Bins {
			return fmt.Errorf("rand: m must be in [0, %d], got %d", p.Bins-1, p.M)
		}
	case "trivial":
	default:
		return fmt.Errorf("scheme: expected auto, rand or trivial, got %q", p.Scheme)
	}
	return nil
}

// augStep is one augmentation chosen for a sample.
type augStep struct {
	Aug      int
	Bin      int // -1: no magnitude
	Negative bool
}

// choose draws the augmentations of one sample into steps: AutoAugment picks a
// sub-policy uniformly and runs each stage with its probability; RandAugment picks n
// augmentations uniformly (with replacement) at bin m; TrivialAugment picks one
// augmentation and one bin uniformly. Signs are drawn for every step (used only by
// augmentations that are randomly negated).
func (p *augPolicy) choose(rng *engine.RNG, steps []augStep) ([]augStep, int) {
	steps = steps[:0]
	switch p.Scheme {
	case "auto":
		sp := rng.Intn(len(p.SubPolicies))
		for _, st := range p.SubPolicies[sp] {
			u := rng.Float64()
			neg := rng.Uint32()&1 == 1
			if u < st.Prob {
				steps = append(steps, augStep{Aug: st.Aug, Bin: st.Bin, Negative: neg})
			}
		}
		return steps, sp
	case "rand":
		for i := 0; i < p.N; i++ {
			a := rng.Intn(len(p.Augs))
			neg := rng.Uint32()&1 == 1
			steps = append(steps, augStep{Aug: a, Bin: p.M, Negative: neg})
		}
	case "trivial":
		bin := rng.Intn(p.Bins)
		neg := rng.Uint32()&1 == 1
		a := rng.Intn(len(p.Augs))
		steps = append(steps, augStep{Aug: a, Bin: bin, Negative: neg})
	}
	return steps, -1
}

// magnitude is linspace(lo, hi, bins)[bin], negated as drawn.
func (p *augPolicy) magnitude(d *augDef, s augStep) float64 {
	m := d.Lo
	if p.Bins > 1 && s.Bin > 0 {
		// numpy's linspace: lo + i*step, the last one exactly hi.
		m = float64(s.Bin)*((d.Hi-d.Lo)/float64(p.Bins-1)) + d.Lo
		if s.Bin == p.Bins-1 {
			m = d.Hi
		}
	}
	if len(d.Mags) > 0 && s.Bin >= 0 {
		m = d.Mags[s.Bin]
	} else if p.Torchvision {
		m = float64(float32(m)) // torch.linspace's float32 magnitudes
	}
	if d.Negate && s.Negative {
		m = -m
	}
	switch d.Param {
	case "shift_enhance":
		m = 1 + m
	case "sharpness_shifted":
		m = m - 1
	}
	return m
}

type autoAugOp struct {
	args    *engine.Args
	pol     augPolicy
	interp  imaging.Interp
	useFill bool
	fill    byte
	seed    int64
}

type autoAugState struct {
	img   augImage
	steps []augStep
	rng   engine.RNG
}

func newAutoAug(a *engine.Args) (*autoAugOp, error) {
	o := &autoAugOp{args: a, seed: int64(a.Int("seed"))}
	if err := json.Unmarshal([]byte(a.String("policy")), &o.pol); err != nil {
		return nil, a.Errorf("policy", "expected the policy JSON of godali.auto_aug: %v", err)
	}
	if err := o.pol.check(); err != nil {
		return nil, a.Errorf("policy", "%v", err)
	}
	var err error
	o.interp, o.useFill, o.fill, err = warpSampling(a, "auto_aug")
	if err != nil {
		return nil, err
	}
	return o, nil
}

func (o *autoAugOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	out := in[0]
	out.DType = engine.UInt8
	return []engine.TensorMeta{out}, nil
}

func (o *autoAugOp) NewWorkerState() any { return &autoAugState{} }

func (o *autoAugOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	ws.Out[0].Layout = ws.In[0].Layout
	return nil
}

func (o *autoAugOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*autoAugState)
	in, out := ws.In[0], ws.Out[0]
	copy(out.Data, in.Data)
	sh := in.Shape
	frames := 1
	if len(sh) == 4 { // FHWC: the sample's choices for every frame
		frames, sh = sh[0], sh[1:]
	}
	// torchvision's BILINEAR warps are PIL's (its NEAREST ones keep DALI's sampling,
	// which picks the same pixels but on pixel edges).
	st.img.pil = o.pol.Torchvision && o.interp == imaging.InterpLinear
	rng := ws.RNG
	if o.seed >= 0 {
		st.rng.Seed(uint64(o.seed), uint64(ws.Epoch), uint64(ws.Position))
		rng = &st.rng
	}
	st.steps, _ = o.pol.choose(rng, st.steps)
	if o.args.Given("magnitude_bin") {
		bin, err := o.args.IntAt(ws, "magnitude_bin")
		if err != nil {
			return err
		}
		if bin < 0 || bin >= o.pol.Bins {
			return o.args.ArgDataErrorf(ws, "magnitude_bin", "The magnitude bin must be in [0, %d], got %d", o.pol.Bins-1, bin)
		}
		for i := range st.steps {
			st.steps[i].Bin = bin
		}
	}
	n := sh[0] * sh[1] * sh[2]
	for f := 0; f < frames; f++ {
		st.img.pix = out.Data[f*n : (f+1)*n]
		st.img.h, st.img.w, st.img.c = sh[0], sh[1], sh[2]
		for _, s := range st.steps {
			if err := o.apply(&st.img, s); err != nil {
				return o.args.DataErrorf(ws, "%s: %v", o.pol.Augs[s.Aug].Name, err)
			}
		}
	}
	return nil
}

// apply runs one chosen augmentation on im.
func (o *autoAugOp) apply(im *augImage, s augStep) error {
	d := &o.pol.Augs[s.Aug]
	m := o.pol.magnitude(d, s)
	if o.pol.Torchvision {
		if done, err := o.applyTV(im, d, m); done {
			return err
		}
	}
	switch d.Name {
	case "shear_x":
		return im.warpFwd([2][3]float64{{1, m, 0}, {0, 1, 0}}, o.interp, o.useFill, o.fill)
	case "shear_y":
		return im.warpFwd([2][3]float64{{1, 0, 0}, {m, 1, 0}}, o.interp, o.useFill, o.fill)
	case "translate_x":
		if d.Rel {
			m *= float64(im.w)
		}
		return im.warpFwd([2][3]float64{{1, 0, m}, {0, 1, 0}}, o.interp, o.useFill, o.fill)
	case "translate_y":
		if d.Rel {
			m *= float64(im.h)
		}
		return im.warpFwd([2][3]float64{{1, 0, 0}, {0, 1, m}}, o.interp, o.useFill, o.fill)
	case "rotate":
		return im.rotate(m, o.interp, o.useFill, o.fill)
	case "brightness":
		im.affine(float32(m), 0)
	case "contrast":
		im.contrast(float32(m))
	case "color":
		return im.saturation(m)
	case "sharpness":
		im.sharpness(float32(m))
	case "posterize":
		if d.Param == "poster_mask" {
			im.posterize(posterMask(m))
		} else {
			im.posterize(byte(min(max(math.Round(m), 0), 255)))
		}
	case "solarize":
		im.solarize(m)
	case "solarize_add":
		im.solarizeAdd(byte(min(max(math.Trunc(m), 0), 127))) // np.uint8(shift) truncates
	case "invert":
		im.invert()
	case "equalize":
		im.equalize()
	case "auto_contrast":
		im.autoContrast()
	case "identity":
	}
	return nil
}

// applyTV runs the augmentations whose torchvision (PIL) definition differs from DALI's;
// done is false for the others, which are the same in both.
func (o *autoAugOp) applyTV(im *augImage, d *augDef, m float64) (done bool, err error) {
	rgb := func() error {
		if im.c != 3 {
			return fmt.Errorf("torchvision's %s needs RGB images, got %d channels", d.Name, im.c)
		}
		return nil
	}
	switch d.Name {
	case "shear_x":
		if im.pil {
			return true, im.pilShear(m, true, o.interp, o.useFill, o.fill)
		}
		return true, im.warpFwd([2][3]float64{{1, -m, 0}, {0, 1, 0}}, o.interp, o.useFill, o.fill)
	case "shear_y":
		if im.pil {
			return true, im.pilShear(m, false, o.interp, o.useFill, o.fill)
		}
		return true, im.warpFwd([2][3]float64{{1, 0, 0}, {-m, 1, 0}}, o.interp, o.useFill, o.fill)
	case "rotate":
		if im.pil {
			return true, im.pilRotate(m, o.interp, o.useFill, o.fill)
		}
		return false, nil
	case "translate_x":
		if d.Rel {
			m *= float64(im.w)
		}
		return true, im.warpFwd([2][3]float64{{1, 0, math.Trunc(m)}, {0, 1, 0}}, o.interp, o.useFill, o.fill)
	case "translate_y":
		if d.Rel {
			m *= float64(im.h)
		}
		return true, im.warpFwd([2][3]float64{{1, 0, 0}, {0, 1, math.Trunc(m)}}, o.interp, o.useFill, o.fill)
	case "brightness":
		pilBlendConst(im.pix, 0, float32(m))
		return true, nil
	case "color":
		if err := rgb(); err != nil {
			return true, err
		}
		pilBlendL(im.pix, float32(m))
		return true, nil
	case "contrast":
		if err := rgb(); err != nil {
			return true, err
		}
		pilBlendConst(im.pix, pilMeanL(im.pix), float32(m))
		return true, nil
	case "sharpness":
		im.pilSharpness(float32(m))
		return true, nil
	case "auto_contrast":
		im.pilAutoContrast()
		return true, nil
	case "equalize":
		im.pilEqualize()
		return true, nil
	}
	return false, nil
}
