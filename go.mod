module github.com/godali/godali

go 1.26.8

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	golang.org/x/image v0.47.0
	golang.org/x/sys v0.49.0
	google.golang.org/protobuf v1.36.12
	gorgonia.org/cu v0.9.6
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
