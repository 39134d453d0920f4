/* A plain C program built against an installed prefix with pkg-config
 * (tests/check_install_layout.cmake): it loads libgodali.so.0 and asks for its version. */
#include <godali.h>
#include <stdio.h>

int main(void) {
  int major = -1, minor = -1, patch = -1;
  if (godali_version(&major, &minor, &patch) != GODALI_OK) return 1;
  printf("godali %d.%d.%d\n", major, minor, patch);
  return (major == GODALI_VERSION_MAJOR && minor == GODALI_VERSION_MINOR) ? 0 : 1;
}
