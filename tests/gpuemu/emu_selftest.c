/*
 * emu_selftest.c: checks that the emulated driver behaves as the real one in the ways
 * godali's tests rely on (`make check`): stream order and asynchrony, event semantics,
 * pinned versus pageable copies, the legacy stream's implicit synchronisation, range
 * and handle checks, launch limits, a real kernel, and a kernel overrun faulting on a
 * guard page. With an argument it runs one mode as a child process: "no-device" expects
 * cuInit to fail (run with CUDA_VISIBLE_DEVICES=""), "fault" overruns an allocation.
 *
 * The emulator reports every fault and rejected call it sees on stderr, and this test
 * provokes many on purpose. Those expected reports go to a log file beside the binary
 * (emu_selftest.log), which the test checks; the build log gets one line saying so, and
 * the whole log only when a check fails.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "../../kernels/godali_kernels.h"

static int failures;

#define EXPECT(cond, ...)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);  \
      fprintf(stderr, __VA_ARGS__);                         \
      fprintf(stderr, "\n");                                \
      failures++;                                           \
    }                                                       \
  } while (0)

#define EXPECT_R(call, want)                                                               \
  do {                                                                                     \
    CUresult r_ = (call);                                                                  \
    EXPECT(r_ == (want), "%s returned %d, want %d (%s)", #call, (int)r_, (int)(want), #want); \
  } while (0)

/* A PTX image naming the kernels: the emulator reads the names, not the code. */
static const char ptx_image[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry godali_crop(.param .u64 godali_crop_param_0) { ret; }\n";

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

static void CUDA_CB slow(void *arg) {
  sleep_ms(100);
  *(volatile int *)arg = 1;
}

static void CUDA_CB mark(void *arg) { *(volatile int *)arg += 1; }

/* check_order: work on a stream runs later, in order. */
static void check_streams(CUstream s) {
  volatile int a = 0, b = 0;
  EXPECT_R(cuLaunchHostFunc(s, slow, (void *)&a), CUDA_SUCCESS);
  EXPECT_R(cuLaunchHostFunc(s, mark, (void *)&b), CUDA_SUCCESS);
  EXPECT(a == 0 && b == 0, "host functions ran before cuLaunchHostFunc returned");
  EXPECT_R(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  EXPECT_R(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT(a == 1 && b == 1, "after cuStreamSynchronize: a=%d b=%d", a, b);
  EXPECT_R(cuStreamQuery(s), CUDA_SUCCESS);
}

static void check_events(CUstream s1, CUstream s2) {
  CUevent e;
  EXPECT_R(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_R(cuEventQuery(e), CUDA_SUCCESS); /* never recorded: complete */
  volatile int a = 0, b = 0;
  EXPECT_R(cuLaunchHostFunc(s1, slow, (void *)&a), CUDA_SUCCESS);
  EXPECT_R(cuEventRecord(e, s1), CUDA_SUCCESS);
  EXPECT_R(cuEventQuery(e), CUDA_ERROR_NOT_READY);
  /* s2 waits for the record as of now; the re-record on an idle stream must not
   * release it early. */
  EXPECT_R(cuStreamWaitEvent(s2, e, 0), CUDA_SUCCESS);
  CUstream s3;
  EXPECT_R(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_R(cuEventRecord(e, s3), CUDA_SUCCESS);
  EXPECT_R(cuLaunchHostFunc(s2, mark, (void *)&b), CUDA_SUCCESS);
  EXPECT_R(cuStreamSynchronize(s3), CUDA_SUCCESS);
  EXPECT_R(cuEventSynchronize(e), CUDA_SUCCESS);
  EXPECT_R(cuEventQuery(e), CUDA_SUCCESS);
  EXPECT_R(cuStreamSynchronize(s2), CUDA_SUCCESS);
  EXPECT(a == 1, "s2 ran past its wait before the first record completed");
  EXPECT(b == 1, "s2's work did not run");
  EXPECT_R(cuStreamDestroy(s3), CUDA_SUCCESS);
  EXPECT_R(cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_R(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
}

static void check_copies(CUstream s) {
  const size_t n = 4096;
  CUdeviceptr d;
  unsigned char *pinned, *pageable = malloc(n);
  EXPECT_R(cuMemAlloc(&d, n), CUDA_SUCCESS);
  EXPECT_R(cuMemHostAlloc((void **)&pinned, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  volatile int gate = 0;

  /* From pageable memory the source is read at the call. */
  memset(pageable, 1, n);
  EXPECT_R(cuLaunchHostFunc(s, slow, (void *)&gate), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyHtoDAsync(d, pageable, n, s), CUDA_SUCCESS);
  memset(pageable, 2, n);
  EXPECT_R(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyDtoH(pageable, d, n), CUDA_SUCCESS);
  EXPECT(pageable[0] == 1 && pageable[n - 1] == 1, "HtoDAsync from pageable memory read it late: %d", pageable[0]);

  /* From pinned memory it is read when the copy runs. */
  memset(pinned, 3, n);
  gate = 0;
  EXPECT_R(cuLaunchHostFunc(s, slow, (void *)&gate), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyHtoDAsync(d, pinned, n, s), CUDA_SUCCESS);
  memset(pinned, 4, n);
  EXPECT_R(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyDtoH(pageable, d, n), CUDA_SUCCESS);
  EXPECT(pageable[0] == 4, "HtoDAsync from pinned memory was not deferred: %d", pageable[0]);

  /* Into pageable memory the copy is done on return; into pinned memory it is not. */
  gate = 0;
  EXPECT_R(cuLaunchHostFunc(s, slow, (void *)&gate), CUDA_SUCCESS);
  EXPECT_R(cuMemsetD8Async(d, 5, n, s), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyDtoHAsync(pageable, d, n, s), CUDA_SUCCESS);
  EXPECT(gate == 1 && pageable[7] == 5, "DtoHAsync into pageable memory returned early");
  gate = 0;
  memset(pinned, 0, n);
  EXPECT_R(cuLaunchHostFunc(s, slow, (void *)&gate), CUDA_SUCCESS);
  EXPECT_R(cuMemsetD8Async(d, 6, n, s), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyDtoHAsync(pinned, d, n, s), CUDA_SUCCESS);
  EXPECT(gate == 0 && pinned[7] == 0, "DtoHAsync into pinned memory waited");
  EXPECT_R(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT(pinned[7] == 6, "DtoHAsync into pinned memory lost: %d", pinned[7]);

  /* Ranges must lie inside one live allocation. */
  EXPECT_R(cuMemcpyHtoDAsync(d + 16, pinned, n, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_R(cuMemcpyDtoHAsync(pinned + 1, d, n, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_R(cuMemsetD8Async(d + n, 0, 1, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_R(cuMemsetD32Async(d + 2, 0, 1, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_R(cuMemcpyHtoD(d, (void *)(uintptr_t)d, 16), CUDA_ERROR_INVALID_VALUE); /* device memory as host source */
  EXPECT_R(cuMemFree(d + 256), CUDA_ERROR_INVALID_VALUE);
  EXPECT_R(cuMemFreeHost(pinned), CUDA_SUCCESS);
  EXPECT_R(cuMemFree(d), CUDA_SUCCESS);
  EXPECT_R(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
  EXPECT_R(cuMemsetD8Async(d, 0, 1, s), CUDA_ERROR_INVALID_VALUE);
  free(pageable);
}

/* The legacy stream waits for blocking streams, not for non-blocking ones. */
static void check_legacy(void) {
  CUstream blocking, nonblocking;
  EXPECT_R(cuStreamCreate(&blocking, 0), CUDA_SUCCESS);
  EXPECT_R(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr d;
  EXPECT_R(cuMemAlloc(&d, 64), CUDA_SUCCESS);
  char buf[64] = {0};
  volatile int a = 0, b = 0;
  EXPECT_R(cuLaunchHostFunc(blocking, slow, (void *)&a), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyHtoD(d, buf, sizeof buf), CUDA_SUCCESS);
  EXPECT(a == 1, "a synchronous copy did not wait for a blocking stream");
  EXPECT_R(cuLaunchHostFunc(nonblocking, slow, (void *)&b), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyHtoD(d, buf, sizeof buf), CUDA_SUCCESS);
  EXPECT(b == 0, "a synchronous copy waited for a non-blocking stream");
  EXPECT_R(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT(b == 1, "cuCtxSynchronize returned early");
  EXPECT_R(cuMemFree(d), CUDA_SUCCESS);
  EXPECT_R(cuStreamDestroy(blocking), CUDA_SUCCESS);
  EXPECT_R(cuStreamDestroy(nonblocking), CUDA_SUCCESS);
  EXPECT_R(cuStreamSynchronize(blocking), CUDA_ERROR_INVALID_HANDLE);
}

/* crop runs godali_crop of a w x h one-channel image into a cw x ch window. */
static CUresult crop(CUfunction f, CUstream s, CUdeviceptr src, int w, int h, CUdeviceptr dst, int cw, int ch,
                     unsigned bx, unsigned by) {
  godali_crop_desc desc = {src, dst, w, h, w, 1, 0, 0, cw, ch, 9, 1, 0, 0};
  CUdeviceptr dd;
  CUresult r = cuMemAlloc(&dd, sizeof desc);
  if (r != CUDA_SUCCESS) return r;
  if ((r = cuMemcpyHtoD(dd, &desc, sizeof desc)) != CUDA_SUCCESS) return r;
  void *args[] = {&dd};
  r = cuLaunchKernel(f, (unsigned)(cw + bx - 1) / bx, (unsigned)(ch + by - 1) / by, 1, bx, by, 1, 0, s, args, NULL);
  CUresult fr = cuMemFree(dd); /* waits for the launch, as on a GPU */
  return r != CUDA_SUCCESS ? r : fr;
}

static void check_kernels(CUstream s) {
  CUmodule m;
  CUfunction f;
  EXPECT_R(cuModuleLoadData(&m, "not an image"), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_R(cuModuleLoadData(&m, ptx_image), CUDA_SUCCESS);
  EXPECT_R(cuModuleGetFunction(&f, m, "godali_cmn"), CUDA_ERROR_NOT_FOUND); /* not in this image */
  EXPECT_R(cuModuleGetFunction(&f, m, "godali_crop"), CUDA_SUCCESS);
  enum { W = 5, H = 3 };
  unsigned char img[W * H], out[W * H];
  for (int i = 0; i < W * H; i++) img[i] = (unsigned char)i;
  CUdeviceptr src, dst;
  EXPECT_R(cuMemAlloc(&src, sizeof img), CUDA_SUCCESS);
  EXPECT_R(cuMemAlloc(&dst, sizeof out), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyHtoD(src, img, sizeof img), CUDA_SUCCESS);
  EXPECT_R(crop(f, s, src, W, H, dst, W, H, 1025, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_R(crop(f, s, src, W, H, dst, W, H, 32, 64), CUDA_ERROR_INVALID_VALUE);
  EXPECT_R(crop(f, s, src, W, H, dst, W, H, 2, 2), CUDA_SUCCESS);
  EXPECT_R(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_R(cuMemcpyDtoH(out, dst, sizeof out), CUDA_SUCCESS);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      EXPECT(out[y * W + x] == img[y * W + (W - 1 - x)], "crop (flip_h) at (%d,%d): %d", x, y, out[y * W + x]);
  EXPECT_R(cuModuleUnload(m), CUDA_SUCCESS);
  EXPECT_R(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_R(cuMemFree(src), CUDA_SUCCESS);
  EXPECT_R(cuMemFree(dst), CUDA_SUCCESS);
}

/* fault: a crop whose output is larger than its allocation runs into the guard page;
 * stale: a crop reads memory freed just before, whose addresses a new allocation of the
 * same size would otherwise take over. */
static int fault(int stale) {
  CUcontext ctx;
  CUdevice dev;
  CUmodule m;
  CUfunction f;
  CUdeviceptr src, dst;
  if (cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxPushCurrent(ctx) ||
      cuModuleLoadData(&m, ptx_image) || cuModuleGetFunction(&f, m, "godali_crop") || cuMemAlloc(&src, 64 * 64) ||
      cuMemAlloc(&dst, 4096))
    return 2;
  if (stale) {
    if (cuMemFree(src) || cuMemAlloc(&dst, 64 * 64)) return 2;
    if (crop(f, NULL, src, 64, 64, dst, 64, 64, 32, 8) != CUDA_SUCCESS) return 2;
  } else if (crop(f, NULL, src, 64, 64, dst, 64, 65, 32, 8) != CUDA_SUCCESS) {
    return 2;
  }
  cuStreamSynchronize(NULL);
  return 0; /* not reached: the kernel faults */
}

/* count_lines counts the lines of text that contain needle. */
static int count_lines(const char *text, const char *needle) {
  int n = 0;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *hit = strstr(line, needle);
    if (hit && hit < line + len) n++;
    line += len + (end ? 1 : 0);
  }
  return n;
}

/* finish puts stderr back, checks that the log holds the reports the test provoked (the
 * two children's faults, and the rejected calls), and says so in one line; the whole
 * log goes to stderr when something failed. */
static int finish(const char *log_path, int saved_err) {
  fflush(stderr);
  dup2(saved_err, 2);
  close(saved_err);
  static char text[1 << 20];
  size_t n = 0;
  FILE *f = fopen(log_path, "r");
  if (f) {
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
  }
  text[n] = 0;
  int faults = count_lines(text, "faulted at address");
  int illegal = count_lines(text, "CUDA_ERROR_ILLEGAL_ADDRESS");
  int reports = count_lines(text, "gpuemu: ");
  EXPECT(faults == 2 && illegal == 2, "%d fault reports (%d naming CUDA_ERROR_ILLEGAL_ADDRESS), want 2", faults, illegal);
  EXPECT(reports - faults >= 10, "%d reports of rejected calls, want at least 10", reports - faults);
  if (failures) {
    fprintf(stderr, "%s", text);
    fprintf(stderr, "emu_selftest: %d failures (the emulator's log is above and in %s)\n", failures, log_path);
    return 1;
  }
  fprintf(stderr,
          "emu_selftest: ok; the %d faults and %d rejected calls it provokes were reported as "
          "expected (in %s, not shown)\n",
          faults, reports - faults, log_path);
  return 0;
}

static int run_child(const char *self, const char *mode, int clear_devices) {
  pid_t pid = fork();
  if (pid == 0) {
    if (clear_devices) setenv("CUDA_VISIBLE_DEVICES", "", 1);
    execl(self, self, mode, (char *)NULL);
    _exit(127);
  }
  int status;
  waitpid(pid, &status, 0);
  return status;
}

static void check_nvml(void) {
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  EXPECT(h != NULL, "cannot load libnvidia-ml.so.1: %s", dlerror());
  if (!h) return;
  int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
  int (*by_bus)(const char *, void **) = (int (*)(const char *, void **))dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
  int (*name)(void *, char *, unsigned) = (int (*)(void *, char *, unsigned))dlsym(h, "nvmlDeviceGetName");
  int (*affinity)(void *, unsigned, unsigned long *) = (int (*)(void *, unsigned, unsigned long *))dlsym(h, "nvmlDeviceGetCpuAffinity");
  EXPECT(init && by_bus && name && affinity, "NVML functions missing");
  if (!init || !by_bus || !name || !affinity) return;
  void *dev;
  char buf[96];
  unsigned long mask[2] = {0, 0};
  EXPECT(init() == 0, "nvmlInit_v2");
  EXPECT(by_bus("00000000:01:00.0", &dev) == 0, "nvmlDeviceGetHandleByPciBusId_v2 (NVML form)");
  EXPECT(by_bus("0000:01:00.0", &dev) == 0, "nvmlDeviceGetHandleByPciBusId_v2 (CUDA form)");
  EXPECT(by_bus("0000:02:00.0", &dev) == 6, "another bus found");
  EXPECT(name(dev, buf, sizeof buf) == 0 && strcmp(buf, "godali GPU emulator") == 0, "nvmlDeviceGetName: %s", buf);
  EXPECT(affinity(dev, 2, mask) == 0 && (mask[0] | mask[1]) != 0, "nvmlDeviceGetCpuAffinity");
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "no-device") == 0) return cuInit(0) == CUDA_ERROR_NO_DEVICE ? 0 : 1;
  if (cuInit(0) != CUDA_SUCCESS) return 2;
  if (argc > 1 && strcmp(argv[1], "fault") == 0) return fault(0);
  if (argc > 1 && strcmp(argv[1], "stale") == 0) return fault(1);

  /* stderr (the emulator's reports, the children's too, and the checks' messages) into
   * the log from here on. */
  char log_path[4096];
  snprintf(log_path, sizeof log_path, "%s.log", argv[0]);
  int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int saved_err = dup(2);
  if (log_fd < 0 || saved_err < 0 || dup2(log_fd, 2) < 0) {
    perror("emu_selftest: cannot redirect stderr to its log");
    return 2;
  }
  close(log_fd);

  int st = run_child(argv[0], "no-device", 1);
  EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "cuInit with CUDA_VISIBLE_DEVICES=\"\" did not return CUDA_ERROR_NO_DEVICE");
  st = run_child(argv[0], "fault", 0);
  EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a kernel overrunning its allocation did not fault (status 0x%x)", st);
  st = run_child(argv[0], "stale", 0);
  EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a kernel reading freed memory did not fault (status 0x%x)", st);

  int n = 0;
  char name[64];
  CUdevice dev;
  CUcontext ctx, cur;
  CUstream s, s2;
  EXPECT_R(cuDeviceGetCount(&n), CUDA_SUCCESS);
  EXPECT(n == 1, "%d devices", n);
  EXPECT_R(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  EXPECT_R(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_R(cuDeviceGetName(name, sizeof name, dev), CUDA_SUCCESS);
  EXPECT_R(cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT); /* no context yet */
  EXPECT_R(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  EXPECT_R(cuCtxPushCurrent(ctx), CUDA_SUCCESS);
  EXPECT_R(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT(cur == ctx, "current context %p, want %p", (void *)cur, (void *)ctx);
  EXPECT_R(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_R(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  check_streams(s);
  check_streams(CU_STREAM_PER_THREAD);
  check_events(s, s2);
  check_copies(s);
  check_legacy();
  check_kernels(s);
  check_nvml();

  EXPECT_R(cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_R(cuStreamDestroy(s2), CUDA_SUCCESS);
  EXPECT_R(cuCtxPopCurrent(&cur), CUDA_SUCCESS);
  EXPECT_R(cuCtxPopCurrent(&cur), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_R(cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
  const char *s_name;
  EXPECT_R(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s_name), CUDA_SUCCESS);
  EXPECT(strcmp(s_name, "CUDA_ERROR_INVALID_VALUE") == 0, "cuGetErrorName: %s", s_name);
  return finish(log_path, saved_err);
}
