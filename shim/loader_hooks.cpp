// dlclose: the stacks recorded so far are written while the library they may point into is still
// mapped, so the module map in attribution.jsonl covers them (docs/attribution.md); and after it,
// the stack walker forgets what it learnt about return addresses (unwinder.h).
#include <dlfcn.h>

#include "../collector/seam.h"
#include "export.h"
#include "real_driver.h"
#include "unwinder.h"

GMP_EXPORT int dlclose(void* handle) noexcept {
  using Dlclose = int (*)(void*);
  static Dlclose real_dlclose = reinterpret_cast<Dlclose>(gmp::shim::real_dlsym()(RTLD_NEXT, "dlclose"));
  if (real_dlclose == nullptr) return -1;
  gmp::session_before_unload();
  const int rc = real_dlclose(handle);
  gmp::shim::unwinder_objects_unloaded();
  return rc;
}
