// The live query API (include/gpumemprof.h, docs/python.md): reads of what the collector
// publishes, which never wait for it, and the pool trimmer the watchdog calls.
#include <cuda.h>

#include <cstring>

#include "../collector/live_figures.h"
#include "../collector/session.h"
#include "../collector/watchdog.h"
#include "export.h"
#include "capture.h"
#include "pool_tracker.h"
#include "real_driver.h"

namespace gmp::shim {
namespace {

// The watchdog's trim (collector/watchdog.h): keeping 0 bytes releases everything the pool does
// not hold for live allocations, so the pool shrinks to its in-use size (rounded by the driver).
bool trim_pool(uint64_t handle, uint64_t* before, uint64_t* after) {
  auto get = GMP_REAL(cuMemPoolGetAttribute);
  auto trim = GMP_REAL(cuMemPoolTrimTo);
  if (get == nullptr || trim == nullptr) return false;
  const auto pool = reinterpret_cast<CUmemoryPool>(handle);
  cuuint64_t b = 0, a = 0;
  capture::Relaxed relaxed;  // the collector's thread must not invalidate a capture (capture.h)
  pools::trimmed(pool);
  if (get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &b) != CUDA_SUCCESS || trim(pool, 0) != CUDA_SUCCESS ||
      get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &a) != CUDA_SUCCESS) {
    return false;
  }
  *before = b;
  *after = a;
  return true;
}

[[maybe_unused]] const bool g_trimmer_set = (set_pool_trimmer(trim_pool), true);

// Copies the first `size` bytes of `full` (a caller built against an older, shorter struct).
template <typename T>
void copy_prefix(const T& full, void* out, size_t size) {
  std::memcpy(out, &full, size < sizeof full ? size : sizeof full);
}

}  // namespace
}  // namespace gmp::shim

using gmp::live_figures;
using gmp::session_running;

GMP_EXPORT int gpumemprof_device_stats(int device, gpumemprof_device_stats_t* out, size_t size) {
  if (!session_running()) return -1;
  gpumemprof_device_stats_t s;
  if (out == nullptr || !live_figures().read_device(device, s)) return 0;
  gmp::shim::copy_prefix(s, out, size);
  return 1;
}

GMP_EXPORT int gpumemprof_counts(gpumemprof_counts_t* out, size_t size) {
  if (!session_running()) return -1;
  gpumemprof_counts_t c;
  live_figures().read_counts(c);
  if (out != nullptr) gmp::shim::copy_prefix(c, out, size);
  return 1;
}

GMP_EXPORT void gpumemprof_reset_peaks(void) { live_figures().request_reset(); }

GMP_EXPORT int gpumemprof_sync(uint64_t timeout_ms) {
  if (!session_running()) return -1;
  return gmp::session_sync(timeout_ms) ? 1 : 0;
}

GMP_EXPORT size_t gpumemprof_recent(uint64_t after_seq, gpumemprof_record_t* out, size_t max) {
  if (!session_running() || out == nullptr) return 0;
  return live_figures().read_recent(after_seq, out, max);
}
