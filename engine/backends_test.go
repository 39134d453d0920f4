package engine

import (
	"slices"
	"testing"
)

// The schemas' Backends declare exactly the backends the CUDA flavour registers (so that
// the generated reference and Python see them in both flavours); the CPU flavour
// registers none of them. The operators come from ops/all (ops_test.go).
func TestDeclaredBackendsAreRegistered(t *testing.T) {
	n := 0
	for _, s := range Schemas() {
		if s.Name == "_test.pass" { // partition_test.go's, registered on every device
			continue
		}
		for dev := range s.Backends {
			n++
			if got := slices.Contains(s.Devices, dev); got != CUDAFlavour {
				t.Errorf("%s declares backend %s: registered %v in a build with CUDAFlavour=%v", s.Name, dev, got, CUDAFlavour)
			}
		}
		for _, dev := range s.Devices {
			if _, ok := s.Backends[dev]; dev != "cpu" && !ok {
				t.Errorf("%s registers %s without declaring it", s.Name, dev)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d declared gpu/mixed backends: ops/all not linked in?", n)
	}
}
