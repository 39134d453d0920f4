//go:build cuda

package decoders

// With the cuda tag this test binary links gorgonia.org/cu, whose package init ends the
// process on a host without a usable GPU; cudatest's probe runs first and skips the
// binary cleanly instead (make test-cuda in CI).
import _ "github.com/godali/godali/internal/cuda/cudatest"
