//go:build !cuda

package nvjpeg

import "github.com/godali/godali/internal/cuda"

// Library is the loaded libnvjpeg; the CPU flavour never loads it.
type Library struct {
	Path                string
	Major, Minor, Patch int
}

// Load reports cuda.ErrNoCUDA: nvJPEG is only used by the CUDA flavour.
func Load() (*Library, error) { return nil, cuda.ErrNoCUDA }
