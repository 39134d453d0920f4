// The public header compiles as C++ and its error path works from C++.
#include <godali.h>

#include <cstdio>
#include <cstring>

int main() {
  godali_pipeline_t p = 0;
  const char *bad = "{\"batch_size\": 0}";
  if (godali_pipeline_create(bad, std::strlen(bad), &p) != GODALI_ERROR_INVALID_PIPELINE) return 1;
  if (std::strstr(godali_last_error(), "batch_size") == nullptr) return 2;
  std::printf("ok: %s\n", godali_last_error());
  return 0;
}
