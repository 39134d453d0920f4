//go:build cuda

package engine

// CUDAFlavour tells whether this build has the GPU backend (the cuda build tag).
const CUDAFlavour = true
