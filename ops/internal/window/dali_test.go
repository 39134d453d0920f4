package window

import (
	"testing"

	"github.com/godali/godali/engine"
)

// TestDALIFallbackSizes: with area [1, 1] and aspect ratio [9.9, 10] no draw fits, and
// DALI 2.4's decoders.image_random_crop gives these window sizes (measured by
// tests/compat/decsweep.py's rcrop-full case on the real-world corpus: width x height of
// the image, then of the window); torchvision's fallback rounds where DALI truncates.
func TestDALIFallbackSizes(t *testing.T) {
	measured := [][4]int{
		{375, 500, 375, 37}, {424, 238, 424, 42}, {500, 375, 500, 50}, {242, 136, 242, 24},
		{500, 281, 500, 50}, {276, 207, 276, 27}, {40, 24, 40, 4}, {24, 40, 24, 2},
		{192, 144, 192, 19}, {227, 149, 227, 22}, {256, 160, 256, 25}, {4, 4, 4, 1},
		{100, 100, 100, 10}, {10, 10, 10, 1}, {200, 200, 200, 20}, {500, 450, 500, 50},
		{8, 8, 8, 1}, {800, 531, 800, 80}, {480, 360, 480, 48}, {300, 225, 300, 30},
		{128, 128, 128, 12}, {500, 500, 500, 50}, {425, 250, 425, 42}, {512, 256, 512, 51},
		{256, 512, 256, 25}, {300, 200, 300, 30}, {640, 480, 640, 64}, {1, 1, 1, 1},
		{1, 2, 1, 1}, {480, 640, 480, 48},
	}
	rc := &RandomCrop{AreaMin: 1, AreaMax: 1, RatioMin: 9.9, RatioMax: 10, Attempts: 10, DALI: true}
	var rng engine.RNG
	differs := false
	for _, m := range measured {
		for seed := uint64(0); seed < 20; seed++ {
			rng.Seed(seed)
			r := rc.Window(m[0], m[1], &rng)
			if r.W != m[2] || r.H != m[3] || r.X < 0 || r.Y < 0 || r.X+r.W > m[0] || r.Y+r.H > m[1] {
				t.Fatalf("%dx%d seed %d: window %+v, DALI's size %dx%d", m[0], m[1], seed, r, m[2], m[3])
			}
		}
		tv := *rc
		tv.DALI = false
		if f := tv.Fallback(m[0], m[1]); f.W != m[2] || f.H != m[3] {
			differs = true
		}
	}
	if !differs {
		t.Error("torchvision's fallback gives DALI's sizes everywhere: the case tests nothing")
	}
}

// TestDALIWindows: DALI's draws lie inside the image with their rounded ratio in range,
// the fallback is placed at random (not always centred), and images too wide for any
// draw take the widest window the range allows, whole height.
func TestDALIWindows(t *testing.T) {
	rc := &RandomCrop{AreaMin: 0.08, AreaMax: 1, RatioMin: 3.0 / 4, RatioMax: 4.0 / 3, Attempts: 10, DALI: true}
	var rng engine.RNG
	for seed := uint64(0); seed < 3000; seed++ {
		rng.Seed(seed)
		w, h := 20+int(seed%300), 20+int(seed*7%300)
		r := rc.Window(w, h, &rng)
		if r.X < 0 || r.Y < 0 || r.W < 1 || r.H < 1 || r.X+r.W > w || r.Y+r.H > h {
			t.Fatalf("%dx%d: window %+v outside", w, h, r)
		}
		if ratio := float32(r.W) / float32(r.H); (ratio < 0.75 || ratio > float32(4.0/3)) && !(r.W == w && r.H == h) {
			if f := rc.Fallback(w, h); f.W != r.W || f.H != r.H {
				t.Fatalf("%dx%d: window %+v with ratio %v out of range, not the fallback", w, h, r, ratio)
			}
		}
	}
	wide := &RandomCrop{AreaMin: 0.5, AreaMax: 1, RatioMin: 0.5, RatioMax: 2, Attempts: 10, DALI: true}
	xs := map[int]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		rng.Seed(seed)
		r := wide.Window(400, 50, &rng) // 8:1, a window of ratio <= 2 covers at most 1/4
		if r.W != 100 || r.H != 50 {
			t.Fatalf("400x50: window %+v, want 100x50", r)
		}
		xs[r.X] = true
	}
	if len(xs) < 10 {
		t.Errorf("the fallback window took %d positions in 50 draws: not placed at random", len(xs))
	}
}
