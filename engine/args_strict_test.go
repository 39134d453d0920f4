package engine

import (
	"strings"
	"testing"
)

func TestReadingAnUndeclaredArgumentPanicsInTests(t *testing.T) {
	s := &Schema{Name: "strict_probe", Args: []ArgSpec{{Name: "size", Type: ArgInt, Default: 3}}}
	a := &Args{Schema: s, values: map[string]any{"size": int64(3)}}
	if a.Int("size") != 3 || !a.Declares("size") || a.Declares("sise") {
		t.Fatal("declared argument not read")
	}
	for name, read := range map[string]func(){
		"misspelled": func() { a.Int("sise") },
		"mistyped":   func() { a.Float("size") },
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "strict_probe") {
					t.Errorf("%s: got %v, want a panic naming the operator", name, r)
				}
			}()
			read()
		}()
	}
}

func TestClosestNameFindsMisspellings(t *testing.T) {
	names := []string{"horizontal", "vertical", "depthwise", "random_area", "random_aspect_ratio"}
	for word, want := range map[string]string{"horizontall": "horizontal", "vertcal": "vertical",
		"random_areaa": "random_area", "zzzzzzzz": "", "depth": "", "vertica": "vertical"} {
		if got := closestName(word, names); got != want {
			t.Errorf("closestName(%q) = %q, want %q", word, got, want)
		}
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance(kitten, sitting) = %d, want 3", d)
	}
}
