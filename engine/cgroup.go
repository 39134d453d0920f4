package engine

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPUBudget is what the process may use of the machine's CPUs: the CPUs of its affinity
// mask, bounded by its cgroup's CPU quota. os.cpu_count() and runtime.NumCPU() report
// neither limit in a container.
type CPUBudget struct {
	// AffinityCPUs is the number of CPUs in the process's affinity mask
	// (sched_getaffinity).
	AffinityCPUs int `json:"affinity_cpus"`
	// QuotaCPUs is the cgroup CPU quota in CPUs (quota / period); 0: no quota.
	QuotaCPUs float64 `json:"cgroup_cpu_quota"`
	// QuotaFile is the file that set QuotaCPUs (the lowest quota of the process's cgroup
	// and its ancestors), "" without a quota.
	QuotaFile string `json:"cgroup_cpu_quota_file,omitempty"`
	// Usable is min(AffinityCPUs, QuotaCPUs rounded to the nearest CPU), at least 1.
	Usable int `json:"usable_cpus"`
}

// MemoryBudget is the memory the process may use: its cgroup's limit and the system's
// MemAvailable, each 0 when unknown or unlimited.
type MemoryBudget struct {
	CgroupLimit     int64  `json:"cgroup_memory_limit"`
	CgroupLimitFile string `json:"cgroup_memory_limit_file,omitempty"`
	MemAvailable    int64  `json:"mem_available"`
}

// Available is the lower of the known limits; 0 when neither is known.
func (m MemoryBudget) Available() int64 {
	switch {
	case m.CgroupLimit > 0 && m.MemAvailable > 0:
		return min(m.CgroupLimit, m.MemAvailable)
	case m.CgroupLimit > 0:
		return m.CgroupLimit
	}
	return m.MemAvailable
}

// cgroupRoot is where the cgroup file systems are mounted; tests read fake trees.
const cgroupRoot = "/sys/fs/cgroup"

// ReadCPUBudget reads the process's CPU budget from the running system.
func ReadCPUBudget() CPUBudget {
	self, _ := os.ReadFile("/proc/self/cgroup")
	return cpuBudget(affinityCount(), cgroupRoot, self)
}

// ReadMemoryBudget reads the process's memory budget from the running system.
func ReadMemoryBudget() MemoryBudget {
	self, _ := os.ReadFile("/proc/self/cgroup")
	m := MemoryBudget{}
	m.CgroupLimit, m.CgroupLimitFile = cgroupMemoryLimit(cgroupRoot, self)
	if info, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemAvailable = memAvailable(info)
	}
	return m
}

// affinityCount is the number of CPUs the process may run on (1 when it cannot be read).
func affinityCount() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() == 0 {
		return 1
	}
	return set.Count()
}

// cpuBudget combines an affinity count with the quota of the cgroup tree at root, where
// self is the content of /proc/self/cgroup.
func cpuBudget(affinity int, root string, self []byte) CPUBudget {
	b := CPUBudget{AffinityCPUs: max(affinity, 1)}
	b.QuotaCPUs, b.QuotaFile = cgroupCPUQuota(root, self)
	b.Usable = b.AffinityCPUs
	if b.QuotaCPUs > 0 {
		q := max(int(math.Floor(b.QuotaCPUs+0.5)), 1)
		b.Usable = min(b.Usable, q)
	}
	return b
}

// cgroupPaths parses /proc/self/cgroup: the v2 path ("0::/a/b") and the v1 path of each
// controller ("4:cpu,cpuacct:/a/b" gives cpu and cpuacct).
func cgroupPaths(self []byte) (v2 string, v1 map[string]string) {
	v1 = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			v1[c] = f[2]
		}
	}
	return v2, v1
}

// cgroupDirs lists the directories of a cgroup and its ancestors under mount, the
// deepest first. The process's path may not exist under the mount (a container that
// sees only its own cgroup, mounted at the root): the levels missing are skipped and
// the mount itself is always last.
func cgroupDirs(mount, path string) []string {
	var dirs []string
	p := filepath.Clean("/" + path)
	for p != "/" && p != "." {
		d := filepath.Join(mount, p)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			dirs = append(dirs, d)
		}
		p = filepath.Dir(p)
	}
	return append(dirs, mount)
}

// isCgroup2 says whether mount is a cgroup v2 (unified) hierarchy.
func isCgroup2(mount string) bool {
	_, err := os.Stat(filepath.Join(mount, "cgroup.controllers"))
	return err == nil
}

// v1Mount finds the mount of a v1 controller under root ("cpu", or the joined
// "cpu,cpuacct" directory).
func v1Mount(root, controller string, joined ...string) string {
	for _, name := range append([]string{controller}, joined...) {
		d := filepath.Join(root, name)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// cgroupCPUQuota is the lowest CPU quota (in CPUs) of the process's cgroup and its
// ancestors, and the file that set it; 0 when there is none ("max", -1) or the files
// cannot be read. v2: cpu.max ("QUOTA PERIOD" or "max PERIOD"); v1: cpu.cfs_quota_us /
// cpu.cfs_period_us.
func cgroupCPUQuota(root string, self []byte) (float64, string) {
	v2, v1 := cgroupPaths(self)
	best, file := 0.0, ""
	take := func(q float64, f string) {
		if q > 0 && (best == 0 || q < best) {
			best, file = q, f
		}
	}
	if isCgroup2(root) {
		for _, d := range cgroupDirs(root, v2) {
			f := filepath.Join(d, "cpu.max")
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			fields := strings.Fields(string(data))
			if len(fields) == 0 || fields[0] == "max" {
				continue
			}
			quota, err1 := strconv.ParseFloat(fields[0], 64)
			period := 100000.0 // the kernel's default when only the quota is written
			var err2 error
			if len(fields) > 1 {
				period, err2 = strconv.ParseFloat(fields[1], 64)
			}
			if err1 == nil && err2 == nil && quota > 0 && period > 0 {
				take(quota/period, f)
			}
		}
		return best, file
	}
	mount := v1Mount(root, "cpu", "cpu,cpuacct", "cpuacct,cpu")
	if mount == "" {
		return 0, ""
	}
	for _, d := range cgroupDirs(mount, v1["cpu"]) {
		qf := filepath.Join(d, "cpu.cfs_quota_us")
		quota, ok1 := readInt(qf)
		period, ok2 := readInt(filepath.Join(d, "cpu.cfs_period_us"))
		if ok1 && ok2 && quota > 0 && period > 0 {
			take(float64(quota)/float64(period), qf)
		}
	}
	return best, file
}

// cgroupMemoryLimit is the lowest memory limit of the process's cgroup and its
// ancestors (v2 memory.max, v1 memory.limit_in_bytes), and its file; 0 when unlimited.
func cgroupMemoryLimit(root string, self []byte) (int64, string) {
	v2, v1 := cgroupPaths(self)
	var best int64
	file := ""
	take := func(v int64, f string) {
		// v1 writes "unlimited" as a huge page-aligned number.
		if v > 0 && v < 1<<62 && (best == 0 || v < best) {
			best, file = v, f
		}
	}
	if isCgroup2(root) {
		for _, d := range cgroupDirs(root, v2) {
			f := filepath.Join(d, "memory.max")
			if v, ok := readInt(f); ok {
				take(v, f)
			}
		}
		return best, file
	}
	mount := v1Mount(root, "memory")
	if mount == "" {
		return 0, ""
	}
	for _, d := range cgroupDirs(mount, v1["memory"]) {
		f := filepath.Join(d, "memory.limit_in_bytes")
		if v, ok := readInt(f); ok {
			take(v, f)
		}
	}
	return best, file
}

// memAvailable reads MemAvailable (bytes) from /proc/meminfo's content; 0 if absent.
func memAvailable(info []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || v < 0 {
				return 0
			}
			if len(f) >= 3 && f[2] == "kB" {
				v *= 1024
			}
			return v
		}
	}
	return 0
}

// readInt reads a file holding one integer ("max" and anything else: not ok).
func readInt(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return v, err == nil
}
