// A C++ program that links godali through its CMake package and asks for its version.
#include <godali.h>

#include <cstdio>

int main() {
  int major = -1, minor = -1, patch = -1;
  if (godali_version(&major, &minor, &patch) != GODALI_OK) return 1;
  std::printf("godali %d.%d.%d\n", major, minor, patch);
  return (major == GODALI_VERSION_MAJOR && minor == GODALI_VERSION_MINOR) ? 0 : 1;
}
