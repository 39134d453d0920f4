// kernels_host.cc: godali's real kernel source (kernels/kernels.cu, found through
// -I../../kernels) compiled for the host, and the table through which cuda_emu.c finds
// and launches the kernels. No kernel code is written here: each table entry is derived
// from the kernel's own declaration, so a changed parameter list changes the table.

#include <stddef.h>
#include <stdint.h>

#include <utility>

#include "host_prelude.h"

#include "kernels.cu"

#include "emu.h"

namespace {

// Thunk<F, f> calls kernel f with its parameters read from an array of pointers to
// their values (cuLaunchKernel's kernelParams), and describes those parameters.
template <typename F, F f>
struct Thunk;

template <typename... A, void (*f)(A...)>
struct Thunk<void (*)(A...), f> {
  template <size_t... I>
  static void call(void *const *args, std::index_sequence<I...>) {
    f(*static_cast<A *>(args[I])...);
  }
  static void run(void *const *args) { call(args, std::index_sequence_for<A...>{}); }
  // One extra element: a kernel without parameters still gets valid arrays.
  static constexpr uint16_t sizes[sizeof...(A) + 1] = {sizeof(A)..., 0};
  static constexpr uint16_t aligns[sizeof...(A) + 1] = {alignof(A)..., 0};
};

}  // namespace

#define GDEMU_KERNEL(k)                                                                  \
  {                                                                                      \
    #k, Thunk<decltype(&k), &k>::run, (int)(sizeof(Thunk<decltype(&k), &k>::sizes) /    \
                                            sizeof(uint16_t)) - 1,                       \
        Thunk<decltype(&k), &k>::sizes, Thunk<decltype(&k), &k>::aligns                  \
  }

// Every extern "C" __global__ function of kernels.cu. A kernel added there and not here
// makes cuModuleGetFunction report CUDA_ERROR_NOT_FOUND, naming it.
extern "C" const gdemu_kernel gdemu_kernels[] = {
    GDEMU_KERNEL(godali_resize_h),
    GDEMU_KERNEL(godali_resize_v),
    GDEMU_KERNEL(godali_cmn),
    GDEMU_KERNEL(godali_crop),
    GDEMU_KERNEL(godali_color),
    GDEMU_KERNEL(godali_nv12_rgb),
};
extern "C" const int gdemu_nkernels = sizeof(gdemu_kernels) / sizeof(gdemu_kernels[0]);

// Whether this thread is inside gdemu_run_grid, for fault reports.
static thread_local bool running;

extern "C" void gdemu_run_grid(const gdemu_kernel *k, const unsigned grid[3], const unsigned block[3],
                               void *const *args) {
  gridDim = {grid[0], grid[1], grid[2]};
  blockDim = {block[0], block[1], block[2]};
  running = true;
  for (unsigned bz = 0; bz < grid[2]; bz++)
    for (unsigned by = 0; by < grid[1]; by++)
      for (unsigned bx = 0; bx < grid[0]; bx++) {
        blockIdx = {bx, by, bz};
        for (unsigned tz = 0; tz < block[2]; tz++)
          for (unsigned ty = 0; ty < block[1]; ty++)
            for (unsigned tx = 0; tx < block[0]; tx++) {
              threadIdx = {tx, ty, tz};
              k->run(args);
            }
      }
  running = false;
}

extern "C" int gdemu_grid_position(unsigned block[3], unsigned thread[3]) {
  if (!running) return 0;
  block[0] = blockIdx.x, block[1] = blockIdx.y, block[2] = blockIdx.z;
  thread[0] = threadIdx.x, thread[1] = threadIdx.y, thread[2] = threadIdx.z;
  return 1;
}
