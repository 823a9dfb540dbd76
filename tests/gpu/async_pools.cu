// Stream-ordered allocator workload: the default pool (cudaMallocAsync), a custom pool
// (cudaMemPoolCreate, cudaMallocFromPoolAsync, cudaMallocAsync after cudaDeviceSetMemPool, trim,
// destroy) and one failed cudaMallocAsync. Allocated bytes are the sizes requested here; reserved
// bytes are the pools' own figures, read from the driver after every pool operation and sync,
// the way docs/design.md §Accounting says the shim reads them.
//
// Why the two pools peak together: the device-level pool.reserved.peak is the maximum over time of
// the sum of the pools' reserved bytes. The driver only keeps a high-water mark per pool
// (RESERVED_MEM_HIGH), and the sum of those equals the device peak only if every pool is at its
// own high at the same moment. The sequence below makes it so (both pools are at their highs right
// after b2; nothing is released until the next sync, and later growth stays smaller), and checks
// it: the sum of the driver's highs must equal the maximum of the sums read along the way.
//
// The failed request comes first, and the default pool's watermarks are reset right after it: the
// driver counts a failed request's attempt in RESERVED_MEM_HIGH (seen on an H200, CUDA 13: the
// default pool's high was ~139 GiB after the 2 x total request, with nothing reserved), which
// would make the sum of the highs meaningless as ground truth.
#include <cuda_runtime.h>
#include <vector>
#include "truth.h"

static uint64_t attr(cudaMemPool_t p, cudaMemPoolAttr a) {
  uint64_t v = 0;
  if (cudaMemPoolGetAttribute(p, a, &v) != cudaSuccess) return ~0ull;
  return v;
}

int main() {
  truth::Writer w("async_pools");
  truth::Device d;
  auto check = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess) w.error("%s: %s", what, cudaGetErrorName(e));
    return e == cudaSuccess;
  };
  if (!check(cudaSetDevice(0), "cudaSetDevice")) return w.finish();
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const uint64_t total = prop.totalGlobalMem;
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaMemPool_t def = nullptr, P = nullptr;
  check(cudaDeviceGetDefaultMemPool(&def, 0), "cudaDeviceGetDefaultMemPool");
  std::vector<cudaMemPool_t> pools{def};
  // What the shim does: after each operation, reserved = sum over the device's live pools.
  auto reread = [&] {
    uint64_t sum = 0;
    for (auto p : pools) sum += attr(p, cudaMemPoolAttrReservedMemCurrent);
    d.pool_reserved = sum;
    d.update();
  };
  struct Live { void* p; uint64_t size; };
  auto alloc = [&](uint64_t size, cudaMemPool_t from) -> Live {
    void* p = nullptr;
    cudaError_t e = from ? cudaMallocFromPoolAsync(&p, size, from, s) : cudaMallocAsync(&p, size, s);
    if (!check(e, from ? "cudaMallocFromPoolAsync" : "cudaMallocAsync")) return {nullptr, 0};
    d.pool.add(size);
    reread();
    return {p, size};
  };
  auto release = [&](Live& l) {
    if (l.p && check(cudaFreeAsync(l.p, s), "cudaFreeAsync")) { d.pool.sub(l.size); reread(); }
    l.p = nullptr;
  };
  constexpr uint64_t MiB = 1 << 20;

  // 1. An impossible request first, while no pool holds anything the driver could trim.
  void* big = nullptr;
  cudaError_t e = cudaMallocAsync(&big, 2 * total, s);
  if (e == cudaSuccess) { w.error("cudaMallocAsync(2 x total) succeeded"); cudaFreeAsync(big, s); }
  else d.failed++;
  if (e != cudaErrorMemoryAllocation) w.error("cudaMallocAsync(2 x total) returned %s", cudaGetErrorName(e));
  cudaGetLastError();
  reread();
  // The driver has now counted the failed attempt in the default pool's RESERVED_MEM_HIGH, though
  // nothing is reserved. Reset both high watermarks (setting 0 resets a watermark to the current
  // value) so that from here on they are the true maxima of this run's reservations. The shim is
  // not affected: it reads RESERVED_MEM_CURRENT (after each pool allocation, trim and
  // synchronisation), never the high, so its pool.reserved.peak is the true maximum.
  w.info("default_high_after_failed", attr(def, cudaMemPoolAttrReservedMemHigh));
  w.info("default_reserved_after_failed", attr(def, cudaMemPoolAttrReservedMemCurrent));
  {
    uint64_t zero = 0;  // cuuint64_t
    check(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReservedMemHigh, &zero),
          "cudaMemPoolSetAttribute(ReservedMemHigh, 0)");
    zero = 0;
    check(cudaMemPoolSetAttribute(def, cudaMemPoolAttrUsedMemHigh, &zero),
          "cudaMemPoolSetAttribute(UsedMemHigh, 0)");
  }
  const uint64_t high_reset = attr(def, cudaMemPoolAttrReservedMemHigh);
  const uint64_t cur_reset = attr(def, cudaMemPoolAttrReservedMemCurrent);
  w.info("default_high_after_reset", high_reset);
  if (high_reset > cur_reset)
    w.error("RESERVED_MEM_HIGH reset did not take: high %llu > current %llu",
            (unsigned long long)high_reset, (unsigned long long)cur_reset);

  // 2-3. Default pool; a2 is freed but its memory stays reserved until the next sync.
  Live a1 = alloc(1 * MiB, nullptr), a2 = alloc(3 * MiB + 7, nullptr), a3 = alloc(8 * MiB, nullptr);
  release(a2);

  // 4-5. Custom pool, reached both directly and as the device's current pool.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  if (!check(cudaMemPoolCreate(&P, &props), "cudaMemPoolCreate")) return w.finish();
  pools.push_back(P);
  Live b1 = alloc(16 * MiB, P);
  check(cudaDeviceSetMemPool(0, P), "cudaDeviceSetMemPool(P)");
  Live b2 = alloc(5 * MiB, nullptr);  // cudaMallocAsync now draws from P
  check(cudaDeviceSetMemPool(0, def), "cudaDeviceSetMemPool(default)");
  check(cudaMemsetAsync(b1.p, 0, b1.size, s), "cudaMemsetAsync");

  // The moment of the peak: every pool at its own high.
  const uint64_t at_peak = d.pool_reserved;
  uint64_t highs_now = attr(def, cudaMemPoolAttrReservedMemHigh) + attr(P, cudaMemPoolAttrReservedMemHigh);
  w.info("peak_reserved_default", attr(def, cudaMemPoolAttrReservedMemCurrent));
  w.info("peak_reserved_custom", attr(P, cudaMemPoolAttrReservedMemCurrent));
  if (highs_now != at_peak)
    w.error("pools not at their highs together: sum(current) %llu, sum(high) %llu",
            (unsigned long long)at_peak, (unsigned long long)highs_now);

  // 6. Free and synchronise: the default pool (release threshold 0) gives memory back here.
  release(b1);
  release(b2);
  release(a1);
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  reread();

  // 7. Trim and destroy the custom pool (empty: destroying a pool with live allocations defers
  // its release until they are freed, which docs/design.md §Accounting does not model).
  check(cudaMemPoolTrimTo(P, 0), "cudaMemPoolTrimTo");
  reread();
  const uint64_t high_custom = attr(P, cudaMemPoolAttrReservedMemHigh);
  w.info("custom_high", high_custom);
  w.info("custom_used_high", attr(P, cudaMemPoolAttrUsedMemHigh));
  w.info("custom_reserved_after_trim", attr(P, cudaMemPoolAttrReservedMemCurrent));
  check(cudaMemPoolDestroy(P), "cudaMemPoolDestroy");
  pools.pop_back();
  reread();

  // 8. Empty the default pool, then one small allocation that stays live at exit. Its reserve
  // (one granule or so) is far below the default pool's earlier high, so the highs stay put.
  release(a3);
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  reread();
  Live c1 = alloc(2 * MiB + 1, nullptr);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  reread();  // the shim reads on cuCtxSynchronize too: this is the final reserved figure

  const uint64_t high_default = attr(def, cudaMemPoolAttrReservedMemHigh);
  w.info("default_high", high_default);
  w.info("default_used_high", attr(def, cudaMemPoolAttrUsedMemHigh));
  w.info("max_of_sum_read", d.res_peak);
  const uint64_t sum_high = high_default + high_custom;
  if (sum_high != d.res_peak)
    w.error("sum of RESERVED_MEM_HIGH %llu != max over time of the sum %llu",
            (unsigned long long)sum_high, (unsigned long long)d.res_peak);

  w.device_checks(d, total);
  w.kind_checks("pool", d.pool);
  w.exact("dev0.by_kind.pool.reserved.peak", sum_high);
  w.exact("dev0.by_kind.pool.reserved.current", d.pool_reserved);
  w.exact("live_at_exit.count", 1);
  w.exact("live_at_exit.bytes", c1.size);
  return w.finish();
}
