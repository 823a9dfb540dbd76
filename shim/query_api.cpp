// The live query API (include/gpumemprof.h, docs/python.md): reads of what the collector
// publishes, which never wait for it.
#include <cstring>

#define GPUMEMPROF_TYPES_ONLY
#include "../include/gpumemprof.h"
#undef GPUMEMPROF_TYPES_ONLY
#include "../collector/seam.h"
#include "export.h"

namespace gmp::shim {
namespace {

// Copies the first `size` bytes of `full` (a caller built against an older, shorter struct).
template <typename T>
void copy_prefix(const T& full, void* out, size_t size) {
  std::memcpy(out, &full, size < sizeof full ? size : sizeof full);
}

}  // namespace
}  // namespace gmp::shim

using gmp::session_running;

GMP_EXPORT int gpumemprof_device_stats(int device, gpumemprof_device_stats_t* out, size_t size) {
  if (!session_running()) return -1;
  gpumemprof_device_stats_t s;
  if (out == nullptr || !gmp::live_device_stats(device, s)) return 0;
  gmp::shim::copy_prefix(s, out, size);
  return 1;
}

GMP_EXPORT int gpumemprof_counts(gpumemprof_counts_t* out, size_t size) {
  if (!session_running()) return -1;
  gpumemprof_counts_t c;
  gmp::live_counts(c);
  if (out != nullptr) gmp::shim::copy_prefix(c, out, size);
  return 1;
}

GMP_EXPORT void gpumemprof_reset_peaks(void) { gmp::live_reset_peaks(); }

GMP_EXPORT int gpumemprof_sync(uint64_t timeout_ms) {
  if (!session_running()) return -1;
  return gmp::session_sync(timeout_ms) ? 1 : 0;
}

GMP_EXPORT size_t gpumemprof_recent(uint64_t after_seq, gpumemprof_record_t* out, size_t max) {
  if (!session_running() || out == nullptr) return 0;
  return gmp::live_recent(after_seq, out, max);
}
