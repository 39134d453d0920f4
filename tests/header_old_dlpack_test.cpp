// godali.h after an older dlpack.h (libtorch 1.x bundles DLPack 0.6 as ATen/dlpack.h,
// under the same include guard): it still compiles, and the versioned managed tensor it
// declares has DLPack 1.x's layout, which the library fills in.
#include "dlpack06/dlpack.h"
#include <godali.h>

#include <cstddef>
#include <cstdio>

static_assert(GODALI_DLPACK_COMPAT == 1, "the older dlpack.h was not the one seen first");
static_assert(offsetof(DLManagedTensorVersioned, manager_ctx) == 8, "manager_ctx moved");
static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "flags moved");
static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "dl_tensor moved");
static_assert(sizeof(DLManagedTensorVersioned) == 32 + sizeof(DLTensor), "size changed");

int main() {
  int major = 0, minor = 0, patch = 0;
  godali_version(&major, &minor, &patch);
  std::printf("ok: godali %d.%d.%d with DLPack %d declared by godali.h\n", major, minor, patch,
              DLPACK_VERSION);
  return 0;
}
