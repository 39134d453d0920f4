package image

import "testing"

// torchvision's CenterCrop: top = int(round((H - h) / 2.0)), Python's round (half to
// even); a crop larger than the image pads (h - H) // 2 rows on the top first.
func TestCropRoundingTorchvision(t *testing.T) {
	pyRound := func(num int) int { // round(num / 2) with ties to even, for num >= 0
		q, r := num/2, num%2
		if r == 1 && q%2 == 1 {
			return q + 1
		}
		return q
	}
	for d := -9; d <= 400; d++ {
		want := 0
		if d >= 0 {
			want = pyRound(d)
		} else {
			want = -((-d) / 2)
		}
		if got, _ := roundTorchvision.start(0.5, d); got != want {
			t.Fatalf("torchvision rounding, size - crop = %d: start %d, want %d", d, got, want)
		}
	}
	// The image of the issue: 341 wide, crop 224 -> d = 117: torchvision starts at 58,
	// DALI's half-up at 59.
	if got, _ := roundTorchvision.start(0.5, 117); got != 58 {
		t.Fatalf("d=117: got %d, want 58", got)
	}
	if got, _ := roundHalfAway.start(0.5, 117); got != 59 {
		t.Fatalf("half_up d=117: got %d, want 59", got)
	}
}
