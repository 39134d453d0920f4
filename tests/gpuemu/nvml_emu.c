/*
 * nvml_emu.c: the NVML functions godali uses (through github.com/NVIDIA/go-nvml), built
 * as libnvidia-ml.so.1, describing the device cuda_emu.c emulates (see README.md).
 * go-nvml opens the library with dlopen and probes versioned symbols (nvmlInit_v2,
 * nvmlDeviceGetHandleByPciBusId_v2, ...) with dlsym; both spellings are exported where
 * NVML has both. Functions the binaries import and this file does not define come from
 * a generated file (Makefile: nvml_stubs.c) that reports them as not emulated.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st *nvmlDevice_t;
struct nvmlDevice_st {
  int index;
};

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

static struct nvmlDevice_st g_device = {0};
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_inits; /* nvmlInit calls not yet matched by nvmlShutdown */

/* The CPUs of the process at nvmlInit: the CPUs "near" the emulated GPU. Taken from the
 * process (the main thread), not the calling thread, which godali may have pinned. */
static cpu_set_t g_near;

static int initialized(void) {
  pthread_mutex_lock(&g_lock);
  int n = g_inits;
  pthread_mutex_unlock(&g_lock);
  return n > 0;
}

#define CHECK_DEVICE(d)                                   \
  do {                                                    \
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;  \
    if ((d) != &g_device) return NVML_ERROR_INVALID_ARGUMENT; \
  } while (0)

GDEMU_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  pthread_mutex_lock(&g_lock);
  if (g_inits++ == 0 && sched_getaffinity(getpid(), sizeof g_near, &g_near) != 0) {
    CPU_ZERO(&g_near);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < n && i < CPU_SETSIZE; i++) CPU_SET(i, &g_near);
  }
  pthread_mutex_unlock(&g_lock);
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
GDEMU_EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

GDEMU_EXPORT nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&g_lock);
  nvmlReturn_t r = g_inits > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
  if (g_inits > 0) g_inits--;
  pthread_mutex_unlock(&g_lock);
  return r;
}

GDEMU_EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
  static const char *const names[] = {
      "Success", "Uninitialized", "Invalid Argument", "Not Supported", "Insufficient Permissions",
      "Already Initialized", "Not Found", "Insufficient Size", "Insufficient External Power",
      "Driver Not Loaded", "Timeout", "Interrupt request issue", "NVML Shared Library Not Found",
      "Function Not Found", "Corrupted infoROM", "GPU is lost", "GPU requires restart",
      "The operating system has blocked the request.", "RM has detected an NVML/RM version mismatch.",
      "In use by another client", "Insufficient Memory", "No data",
  };
  if (r >= 0 && r < (int)(sizeof names / sizeof names[0])) return names[r];
  return "Unknown Error";
}

GDEMU_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < sizeof GDEMU_DRIVER_VERSION_STRING) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(version, GDEMU_DRIVER_VERSION_STRING, sizeof GDEMU_DRIVER_VERSION_STRING);
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
  if (!v) return NVML_ERROR_INVALID_ARGUMENT;
  *v = GDEMU_DRIVER_VERSION;
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = 1; /* NVML ignores CUDA_VISIBLE_DEVICES */
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!device || index != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_device;
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

/* NVML accepts "domain:bus:device.function" with any number of hex digits (CUDA writes a
 * 4-digit domain, NVML an 8-digit one) and "bus:device.function". */
GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!pciBusId || !device) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned dom = 0, bus, dev, fn;
  char tail;
  if (sscanf(pciBusId, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
    dom = 0;
    if (sscanf(pciBusId, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3) return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (dom != GDEMU_PCI_DOMAIN || bus != GDEMU_PCI_BUS || dev != GDEMU_PCI_DEVICE || fn != 0) return NVML_ERROR_NOT_FOUND;
  *device = &g_device;
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device) {
  return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

static void uuid_string(char *buf, size_t len) {
  static const unsigned char uuid[16] = GDEMU_UUID_BYTES;
  int n = snprintf(buf, len, "GPU-");
  for (int i = 0; i < 16; i++) {
    n += snprintf(buf + n, len - (size_t)n, "%02x", uuid[i]);
    if (i == 3 || i == 5 || i == 7 || i == 9) n += snprintf(buf + n, len - (size_t)n, "-");
  }
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
  char ours[64];
  uuid_string(ours, sizeof ours);
  if (strcmp(uuid, ours) != 0) return NVML_ERROR_NOT_FOUND;
  *device = &g_device;
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  CHECK_DEVICE(device);
  char ours[64];
  uuid_string(ours, sizeof ours);
  if (!uuid) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < strlen(ours) + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(uuid, ours, strlen(ours) + 1);
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
  CHECK_DEVICE(device);
  if (!index) return NVML_ERROR_INVALID_ARGUMENT;
  *index = 0;
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  CHECK_DEVICE(device);
  if (!name) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < sizeof GDEMU_DEVICE_NAME) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(name, GDEMU_DEVICE_NAME, sizeof GDEMU_DEVICE_NAME);
  return NVML_SUCCESS;
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
  CHECK_DEVICE(device);
  if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
  *major = GDEMU_CC_MAJOR, *minor = GDEMU_CC_MINOR;
  return NVML_SUCCESS;
}

/* device_used asks the emulated driver, when this process has loaded it, how much
 * device memory is allocated. */
static unsigned long long device_used(void) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  void (*counters)(struct gdemu_stats *) = (void (*)(struct gdemu_stats *))dlsym(h, "gdemu_counters");
  unsigned long long used = 0;
  if (counters) {
    struct gdemu_stats s;
    counters(&s);
    used = s.device_live_bytes;
  }
  dlclose(h);
  return used;
}

GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  CHECK_DEVICE(device);
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long long used = device_used();
  if (used > GDEMU_TOTAL_MEM) used = GDEMU_TOTAL_MEM;
  memory->total = GDEMU_TOTAL_MEM;
  memory->used = used;
  memory->free = GDEMU_TOTAL_MEM - used;
  return NVML_SUCCESS;
}

/* near_cpus is the set the device reports: GODALI_EMU_NVML_CPUS ("1", "0,2-3"), read at
 * each call so that a test may change it, else the process's affinity at nvmlInit. */
static void near_cpus(cpu_set_t *set) {
  const char *v = getenv("GODALI_EMU_NVML_CPUS");
  if (!v || !*v) {
    pthread_mutex_lock(&g_lock);
    *set = g_near;
    pthread_mutex_unlock(&g_lock);
    return;
  }
  CPU_ZERO(set);
  while (*v) {
    char *end;
    long a = strtol(v, &end, 10), b = a;
    if (end == v) break;
    if (*end == '-') {
      v = end + 1;
      b = strtol(v, &end, 10);
      if (end == v) break;
    }
    for (long c = a; c <= b && c >= 0 && c < CPU_SETSIZE; c++) CPU_SET(c, set);
    v = *end == ',' ? end + 1 : end;
    if (*end != ',') break;
  }
}

/* nvmlDeviceGetCpuAffinity fills cpuSetSize words, 64 CPUs each (CPU 0 in the lowest bit
 * of the first word); CPUs beyond them are left out, as NVML does. */
GDEMU_EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet) {
  CHECK_DEVICE(device);
  if (!cpuSet || cpuSetSize == 0) return NVML_ERROR_INVALID_ARGUMENT;
  cpu_set_t near;
  near_cpus(&near);
  const unsigned bits = 8 * sizeof(unsigned long);
  memset(cpuSet, 0, cpuSetSize * sizeof(unsigned long));
  for (unsigned cpu = 0; cpu < CPU_SETSIZE && cpu < cpuSetSize * bits; cpu++)
    if (CPU_ISSET(cpu, &near)) cpuSet[cpu / bits] |= 1ul << (cpu % bits);
  return NVML_SUCCESS;
}
