// HIP stream-ordered pools. Allocated bytes move at hipMallocAsync and hipFreeAsync; reserved bytes
// move only where the pool takes memory from HSA or gives it back (hsa_level.h), which the HSA
// level sees whatever call or thread it happens in: misses here, releases at synchronisations,
// hipMemPoolTrimTo and under memory pressure.
#include "../export.h"
#include "hip_record.h"

using namespace gmp;
using namespace gmp::shim;
using namespace gmp::shim::hip;

namespace {

// A stream that captures gets a graph's memory node, not pool memory: not accounted on AMD yet
// (docs/rocm.md).
bool capturing(hipStream_t stream) {
  auto query = GMP_HIP_REAL(hipStreamIsCapturing);
  hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
  return stream != nullptr && query != nullptr && query(stream, &status) == hipSuccess &&
         status != hipStreamCaptureStatusNone;
}

template <typename Call>
hipError_t alloc_async(Api api, void** ptr, size_t size, hipMemPool_t pool, hipStream_t stream, Call&& call) {
  hsa_level::HipCall scope(hsa_level::Claim::PoolReserve);
  const hipError_t r = call();
  if (!scope.outermost() || !recording() || capturing(stream)) return r;
  ErrnoKeeper keep;
  const int device = hip_stream_device(stream);
  if (pool == nullptr) {
    auto get = GMP_HIP_REAL(hipDeviceGetMemPool);
    if (get == nullptr || get(&pool, device) != hipSuccess) pool = nullptr;
  }
  const uint64_t address = r == hipSuccess && ptr != nullptr ? address_of(*ptr) : 0;
  const auto handle = reinterpret_cast<uint64_t>(pool);
  scope.settle(address, handle, device);
  record_hip_alloc(api, Kind::Pool, device, r,
                   {.address = address, .size = size, .stream = reinterpret_cast<uint64_t>(stream), .pool = handle,
                    .pool_reserved = kNoReading});
  return r;
}

}  // namespace

GMP_EXPORT hipError_t hipMallocAsync(void** ptr, size_t size, hipStream_t stream) {
  auto real = GMP_HIP_REAL_C(hipMallocAsync);
  if (real == nullptr) return hipErrorNotInitialized;
  return alloc_async(Api::hipMallocAsync, ptr, size, nullptr, stream, [&] { return real(ptr, size, stream); });
}

GMP_EXPORT hipError_t hipMallocFromPoolAsync(void** ptr, size_t size, hipMemPool_t pool, hipStream_t stream) {
  auto real = GMP_HIP_REAL_C(hipMallocFromPoolAsync);
  if (real == nullptr) return hipErrorNotInitialized;
  return alloc_async(Api::hipMallocFromPoolAsync, ptr, size, pool, stream,
                     [&] { return real(ptr, size, pool, stream); });
}

GMP_EXPORT hipError_t hipFreeAsync(void* ptr, hipStream_t stream) {
  auto real = GMP_HIP_REAL(hipFreeAsync);
  if (real == nullptr) return hipErrorNotInitialized;
  if (recording() && capturing(stream)) return real(ptr, stream);
  return release(Op::Free, Api::hipFreeAsync, Kind::Pool, address_of(ptr), [&] { return real(ptr, stream); }, 0,
                 reinterpret_cast<uint64_t>(stream));
}

GMP_EXPORT hipError_t hipMemPoolCreate(hipMemPool_t* pool, const hipMemPoolProps* props) {
  auto real = GMP_HIP_REAL(hipMemPoolCreate);
  if (real == nullptr) return hipErrorNotInitialized;
  hsa_level::HipCall scope(hsa_level::Claim::None);
  const hipError_t r = real(pool, props);
  if (scope.outermost() && recording() && r == hipSuccess && pool != nullptr) {
    ErrnoKeeper keep;
    const int device = props != nullptr && props->location.type == hipMemLocationTypeDevice ? props->location.id : -1;
    record_pool_create(Api::hipMemPoolCreate, device, reinterpret_cast<uint64_t>(*pool));
  }
  return r;
}

GMP_EXPORT hipError_t hipMemPoolDestroy(hipMemPool_t pool) {
  auto real = GMP_HIP_REAL(hipMemPoolDestroy);
  if (real == nullptr) return hipErrorNotInitialized;
  const auto handle = reinterpret_cast<uint64_t>(pool);
  // The destroy record releases the pool's allocations and reserve; the HSA frees it makes are its.
  const hsa_level::TakenPool taken = hsa_level::take_pool(handle);
  const hipError_t r = release(Op::PoolDestroy, Api::hipMemPoolDestroy, Kind::Pool, handle,
                               [&] { return real(pool); }, 0, 0, handle);
  if (r != hipSuccess) hsa_level::restore_pool(taken);
  return r;
}
