package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeTree writes files (path relative to root -> content) under a temporary root.
func fakeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		f := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupV2CPUQuota(t *testing.T) {
	root := fakeTree(t, map[string]string{
		"cgroup.controllers":  "cpu memory\n",
		"cpu.max":             "max 100000\n",
		"job/cpu.max":         "250000 100000\n", // 2.5 CPUs
		"job/task/cpu.max":    "max 100000\n",
		"job/task/memory.max": "max\n",
		"job/memory.max":      "1073741824\n",
		"other/cpu.max":       "50000 100000\n", // not the process's cgroup
	})
	self := []byte("0::/job/task\n")
	q, f := cgroupCPUQuota(root, self)
	if q != 2.5 || f != filepath.Join(root, "job/cpu.max") {
		t.Fatalf("quota %v from %q, want 2.5 from job/cpu.max", q, f)
	}
	// Quota below the affinity: the quota, rounded to the nearest CPU, bounds it.
	b := cpuBudget(8, root, self)
	if b.Usable != 3 || b.AffinityCPUs != 8 {
		t.Fatalf("budget %+v, want usable 3 of 8", b)
	}
	// Affinity below the quota: the affinity bounds it.
	if b := cpuBudget(2, root, self); b.Usable != 2 {
		t.Fatalf("budget %+v, want usable 2", b)
	}
	mem, mf := cgroupMemoryLimit(root, self)
	if mem != 1<<30 || mf != filepath.Join(root, "job/memory.max") {
		t.Fatalf("memory limit %d from %q, want 1 GiB from job/memory.max", mem, mf)
	}
}

func TestCgroupV2Max(t *testing.T) {
	// "max" everywhere: no quota, the affinity decides.
	root := fakeTree(t, map[string]string{
		"cgroup.controllers": "cpu\n",
		"cpu.max":            "max 100000\n",
		"memory.max":         "max\n",
	})
	self := []byte("0::/\n")
	if q, f := cgroupCPUQuota(root, self); q != 0 || f != "" {
		t.Fatalf("quota %v from %q, want none", q, f)
	}
	if b := cpuBudget(6, root, self); b.Usable != 6 || b.QuotaCPUs != 0 {
		t.Fatalf("budget %+v, want 6 usable, no quota", b)
	}
	if m, _ := cgroupMemoryLimit(root, self); m != 0 {
		t.Fatalf("memory limit %d, want none", m)
	}
}

func TestCgroupV2ContainerRoot(t *testing.T) {
	// A container sees its own cgroup at the mount's root while /proc/self/cgroup names
	// the host's path, absent here: the root's files count.
	root := fakeTree(t, map[string]string{
		"cgroup.controllers": "cpu\n",
		"cpu.max":            "150000 100000\n",
	})
	b := cpuBudget(16, root, []byte("0::/kubepods/pod1/abc\n"))
	if b.QuotaCPUs != 1.5 || b.Usable != 2 {
		t.Fatalf("budget %+v, want quota 1.5, usable 2", b)
	}
	// A quota under half a CPU still leaves one.
	root = fakeTree(t, map[string]string{"cgroup.controllers": "", "cpu.max": "20000 100000"})
	if b := cpuBudget(4, root, []byte("0::/\n")); b.Usable != 1 {
		t.Fatalf("budget %+v, want usable 1", b)
	}
}

func TestCgroupV1CPUQuota(t *testing.T) {
	root := fakeTree(t, map[string]string{
		"cpu,cpuacct/cpu.cfs_quota_us":            "-1\n",
		"cpu,cpuacct/cpu.cfs_period_us":           "100000\n",
		"cpu,cpuacct/docker/c1/cpu.cfs_quota_us":  "300000\n",
		"cpu,cpuacct/docker/c1/cpu.cfs_period_us": "100000\n",
		"memory/docker/c1/memory.limit_in_bytes":  "536870912\n",
		"memory/memory.limit_in_bytes":            "9223372036854771712\n",
	})
	self := []byte("12:memory:/docker/c1\n4:cpu,cpuacct:/docker/c1\n1:name=systemd:/\n0::/\n")
	b := cpuBudget(64, root, self)
	if b.QuotaCPUs != 3 || b.Usable != 3 || b.QuotaFile != filepath.Join(root, "cpu,cpuacct/docker/c1/cpu.cfs_quota_us") {
		t.Fatalf("budget %+v, want 3 CPUs from docker/c1", b)
	}
	if m, _ := cgroupMemoryLimit(root, self); m != 512<<20 {
		t.Fatalf("memory limit %d, want 512 MiB", m)
	}
	// -1 everywhere: no quota, and v1's "unlimited" memory is no limit.
	root = fakeTree(t, map[string]string{
		"cpu/cpu.cfs_quota_us":         "-1\n",
		"cpu/cpu.cfs_period_us":        "100000\n",
		"memory/memory.limit_in_bytes": "9223372036854771712\n",
	})
	self = []byte("2:cpu:/\n3:memory:/\n")
	if b := cpuBudget(2, root, self); b.Usable != 2 || b.QuotaCPUs != 0 {
		t.Fatalf("budget %+v, want 2 usable, no quota", b)
	}
	if m, _ := cgroupMemoryLimit(root, self); m != 0 {
		t.Fatalf("memory limit %d, want none", m)
	}
}

func TestCgroupUnreadable(t *testing.T) {
	// No cgroup files at all (a missing mount): no quota, no limit, no error.
	root := t.TempDir()
	if b := cpuBudget(3, root, nil); b.Usable != 3 || b.QuotaCPUs != 0 {
		t.Fatalf("budget %+v, want 3 usable", b)
	}
	if b := cpuBudget(0, root, nil); b.Usable != 1 {
		t.Fatalf("budget %+v, want at least 1 usable", b)
	}
	if m, _ := cgroupMemoryLimit(root, []byte("garbage")); m != 0 {
		t.Fatalf("memory limit %d, want none", m)
	}
}

func TestMemAvailable(t *testing.T) {
	info := []byte("MemTotal:       32000000 kB\nMemFree:  100 kB\nMemAvailable:   23210696 kB\n")
	if got := memAvailable(info); got != 23210696*1024 {
		t.Fatalf("MemAvailable %d", got)
	}
	if got := memAvailable([]byte("MemTotal: 5 kB\n")); got != 0 {
		t.Fatalf("absent MemAvailable read as %d", got)
	}
	m := MemoryBudget{CgroupLimit: 100, MemAvailable: 50}
	if m.Available() != 50 {
		t.Fatal(m.Available())
	}
	m = MemoryBudget{CgroupLimit: 100}
	if m.Available() != 100 {
		t.Fatal(m.Available())
	}
}

func TestReadBudgetsLive(t *testing.T) {
	// The running system's: at least one CPU, and no more than the affinity mask holds.
	b := ReadCPUBudget()
	if b.Usable < 1 || b.Usable > b.AffinityCPUs {
		t.Fatalf("live budget %+v", b)
	}
	if m := ReadMemoryBudget(); m.MemAvailable <= 0 {
		t.Fatalf("live memory budget %+v: MemAvailable unread", m)
	}
}
