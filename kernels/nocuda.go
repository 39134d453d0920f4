//go:build !cuda

package kernels

import "github.com/godali/godali/internal/cuda"

// Module is the kernels loaded on a device; the CPU flavour has none.
type Module struct{}

// Load reports cuda.ErrNoCUDA.
func Load(dev *cuda.Device) (*Module, error) { return nil, cuda.ErrNoCUDA }

// Close reports cuda.ErrNoCUDA.
func (m *Module) Close() error { return cuda.ErrNoCUDA }
