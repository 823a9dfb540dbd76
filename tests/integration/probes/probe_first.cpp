// First of two libraries defining gmp_probe_value: asks for the *next* definition, relative to
// itself, the way interposing libraries do. Under the shim this only works if the shim's dlsym
// forwards with a tail jump, leaving this library as the caller glibc sees.
#include <dlfcn.h>

extern "C" int gmp_probe_value() { return 1; }

extern "C" int gmp_probe_next_value() {
  auto next = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "gmp_probe_value"));
  return next ? next() : -1;
}
