package imaging

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"testing"
)

func readU8(src []byte, k int) float64 { return float64(src[k]) }

// TestCropMirrorNormalizeNDMatchesFusedKernel: on HWC uint8 images the generic N-d path
// must give exactly what the fused kernel (CropMirrorNormalize, an independent
// implementation with lookup tables) gives, for every output type, layout, mirror,
// channel padding and windows leaving the image.
func TestCropMirrorNormalizeNDMatchesFusedKernel(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for iter := 0; iter < 200; iter++ {
		w, h, c := 1+rng.Intn(20), 1+rng.Intn(20), 1+rng.Intn(4)
		src := make([]byte, w*h*c)
		rng.Read(src)
		np := NormalizeParams{Scale: 1 + rng.Float32(), Shift: rng.Float32() * 10, Out: DType(rng.Intn(4)),
			CHW: rng.Intn(2) == 0, PadChannels: rng.Intn(2) == 0, Mirror: rng.Intn(2) == 0,
			CropW: 1 + rng.Intn(24), CropH: 1 + rng.Intn(24)}
		np.CropX, np.CropY = rng.Intn(w+8)-4, rng.Intn(h+8)-4
		for ch := 0; ch < c; ch++ {
			np.Mean = append(np.Mean, rng.Float32()*255)
			np.Std = append(np.Std, 1+rng.Float32()*100)
		}
		want := make([]byte, np.OutBytes(c))
		if err := CropMirrorNormalize(want, src, w, h, c, &np); err != nil {
			t.Fatal(err)
		}
		nd := NormalizeND{InShape: []int{h, w, c}, Start: []int{np.CropY, np.CropX, 0}, Size: []int{np.CropH, np.CropW, c},
			Perm: []int{0, 1, 2}, ChanAxis: 2, MirrorAxis: -1, OutC: np.OutChannels(c), Mean: np.Mean, Std: np.Std,
			Scale: np.Scale, Shift: np.Shift, Fill: []float32{0}, Out: np.Out}
		if np.CHW {
			nd.Perm = []int{2, 0, 1}
		}
		if np.Mirror {
			nd.MirrorAxis = 1
		}
		got := make([]byte, len(want))
		if err := CropMirrorNormalizeND(got, src, readU8, &nd); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("iteration %d (%dx%dx%d, %+v): the N-d path differs from the fused kernel", iter, w, h, c, np)
		}
	}
}

// TestCropMirrorNormalizeNDVolume: a DHWC float volume cropped in D, H, W, mirrored,
// to CDHW, with per-channel fill values outside, against direct indexing.
func TestCropMirrorNormalizeNDVolume(t *testing.T) {
	const d, h, w, c = 4, 5, 6, 3
	src := make([]byte, d*h*w*c*4)
	val := func(z, y, x, ch int) float32 { return float32(z*1000 + y*100 + x*10 + ch) }
	for z := 0; z < d; z++ {
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				for ch := 0; ch < c; ch++ {
					binary.LittleEndian.PutUint32(src[(((z*h+y)*w+x)*c+ch)*4:], math.Float32bits(val(z, y, x, ch)))
				}
			}
		}
	}
	read := func(b []byte, k int) float64 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[k*4:])))
	}
	nd := NormalizeND{InShape: []int{d, h, w, c}, Start: []int{1, -1, 2}, Size: []int{2, 3, 5, c},
		Perm: []int{3, 0, 1, 2}, ChanAxis: 3, MirrorAxis: 2, OutC: 4, Mean: []float32{1, 2, 3}, Std: []float32{2, 4, 8},
		Scale: 1, Fill: []float32{-1, -2, -3}, Out: Float32}
	nd.Start = append(nd.Start, 0)
	got := make([]byte, 4*2*3*5*4)
	if err := CropMirrorNormalizeND(got, src, read, &nd); err != nil {
		t.Fatal(err)
	}
	for ch := 0; ch < 4; ch++ {
		for z := 0; z < 2; z++ {
			for y := 0; y < 3; y++ {
				for x := 0; x < 5; x++ {
					sz, sy, sx := 1+z, -1+y, 2+(5-1-x)
					var want float32
					switch {
					case ch >= c:
						want = 0
					case sy < 0 || sy >= h || sx >= w:
						want = nd.Fill[ch]
					default:
						want = float32((float64(val(sz, sy, sx, ch)) - float64(nd.Mean[ch])) / float64(nd.Std[ch]))
					}
					g := math.Float32frombits(binary.LittleEndian.Uint32(got[(((ch*2+z)*3+y)*5+x)*4:]))
					if g != want {
						t.Fatalf("out[c=%d z=%d y=%d x=%d] = %v, want %v", ch, z, y, x, g, want)
					}
				}
			}
		}
	}
}
