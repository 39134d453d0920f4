// The public header compiles as C++ and its error path works from C++.
#include <godali.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

// godali_output_info_t only grows at its end (ABI evolution): the fields of version 0.1
// keep their offsets, and layout follows them.
static_assert(offsetof(godali_output_info_t, num_samples) == 24, "num_samples moved");
static_assert(offsetof(godali_output_info_t, layout) == 32, "layout is appended");
static_assert(sizeof(((godali_output_info_t *)nullptr)->layout) == GODALI_MAX_LAYOUT, "layout size");

int main() {
  godali_pipeline_t p = 0;
  const char *bad = "{\"batch_size\": 0}";
  if (godali_pipeline_create(bad, std::strlen(bad), &p) != GODALI_ERROR_INVALID_PIPELINE) return 1;
  if (std::strstr(godali_last_error(), "batch_size") == nullptr) return 2;
  std::printf("ok: %s\n", godali_last_error());
  return 0;
}
