package cuda

import "math/bits"

// maskCPUs lists the CPUs set in an NVML CPU mask (64 CPUs per word, CPU 0 in the
// lowest bit of the first word).
func maskCPUs(mask []uint) []int {
	var cpus []int
	for w, word := range mask {
		for word != 0 {
			b := bits.TrailingZeros64(uint64(word))
			cpus = append(cpus, w*64+b)
			word &^= 1 << b
		}
	}
	return cpus
}

// WorkerCPUs chooses the CPU for each of n worker threads: workers covered by the
// user's mask (GODALI_AFFINITY_MASK, worker i on user[i]) keep it, the others take the
// CPUs near the GPU in turn (DALI does the same with NVML). -1 means "do not pin".
func WorkerCPUs(n int, user, nearGPU []int) []int {
	cpus := make([]int, n)
	for i := range cpus {
		switch {
		case i < len(user):
			cpus[i] = user[i]
		case len(nearGPU) > 0:
			cpus[i] = nearGPU[(i-len(user))%len(nearGPU)]
		default:
			cpus[i] = -1
		}
	}
	return cpus
}
