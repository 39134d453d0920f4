//go:build cuda

package cuda

import (
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlState initialises NVML once per process; NVML stays initialised until exit, as
// nvmlShutdown would invalidate handles other goroutines may hold.
var nvmlState struct {
	once sync.Once
	err  error
}

func nvmlInit() error {
	nvmlState.once.Do(func() {
		if r := nvml.Init(); r != nvml.SUCCESS {
			nvmlState.err = nvmlError("nvmlInit", r)
		}
	})
	return nvmlState.err
}

func nvmlError(call string, r nvml.Return) error {
	return &Error{Call: call, Code: int(r), Name: "NVML_ERROR", Desc: nvml.ErrorString(r)}
}

// affinityWords is the size of the CPU mask asked from NVML, in 64-bit words: enough
// for 1024 CPUs.
const affinityWords = 16

// Info asks NVML about the device. The device is found by PCI bus id, because NVML's
// indices ignore CUDA_VISIBLE_DEVICES and may be ordered differently from CUDA's.
func (d *Device) Info() (Info, error) {
	if err := nvmlInit(); err != nil {
		return Info{}, fmt.Errorf("device %d: %w", d.ordinal, err)
	}
	bus, err := d.pciBusID()
	if err != nil {
		return Info{}, err
	}
	h, r := nvml.DeviceGetHandleByPciBusId(bus)
	if r != nvml.SUCCESS {
		return Info{}, fmt.Errorf("device %d (%s): %w", d.ordinal, bus, nvmlError("nvmlDeviceGetHandleByPciBusId", r))
	}
	info := Info{PCIBusID: bus}
	if info.Name, r = h.GetName(); r != nvml.SUCCESS {
		return Info{}, fmt.Errorf("device %d: %w", d.ordinal, nvmlError("nvmlDeviceGetName", r))
	}
	mem, r := h.GetMemoryInfo()
	if r != nvml.SUCCESS {
		return Info{}, fmt.Errorf("device %d: %w", d.ordinal, nvmlError("nvmlDeviceGetMemoryInfo", r))
	}
	info.TotalMemory, info.FreeMemory, info.UsedMemory = mem.Total, mem.Free, mem.Used
	mask, r := h.GetCpuAffinity(affinityWords)
	if r != nvml.SUCCESS {
		return Info{}, fmt.Errorf("device %d: %w", d.ordinal, nvmlError("nvmlDeviceGetCpuAffinity", r))
	}
	info.CPUAffinity = maskCPUs(mask)
	return info, nil
}
