// Building events in the HIP wrappers: the device a call's memory goes to and its OOM figures,
// around record.h's common recording.
#pragma once

#include "../record.h"
#include "hip_runtime.h"
#include "hsa_level.h"

namespace gmp::shim::hip {

// The calling thread's current HIP device (where hipMalloc and its kin allocate), -1 when unknown.
inline int current_hip_device() {
  auto get = GMP_HIP_REAL(hipGetDevice);
  int d = -1;
  return get != nullptr && get(&d) == hipSuccess ? d : -1;
}

// The device of a stream's work: the null stream's is the current device.
inline int hip_stream_device(hipStream_t s) {
  auto get = GMP_HIP_REAL(hipGetStreamDeviceId);
  if (s == nullptr || get == nullptr) return current_hip_device();
  const int d = get(s);
  return d >= 0 ? d : current_hip_device();
}

// What HIP says is free on the current device, just after an out-of-memory failure.
inline void record_memory_info(int device) {
  auto info = GMP_HIP_REAL(hipMemGetInfo);
  size_t free = 0, total = 0;
  if (device < 0 || info == nullptr || info(&free, &total) != hipSuccess) return;
  record_device_memory(device, total, free);
}

inline void record_hip_alloc(Api api, Kind kind, int device, hipError_t r, AllocRecord a) {
  record_alloc_with(api, kind, device, r, a, record_memory_info);
}

inline uint64_t address_of(const void* p) { return reinterpret_cast<uint64_t>(p); }

// The common shape of a wrapped HIP allocation: forwards, then `outcome(ok)` says what the call
// returned (address and size), the HSA level is settled and the outcome recorded.
template <typename Call, typename Outcome>
hipError_t allocate(Api api, Kind kind, Call&& call, Outcome&& outcome) {
  hsa_level::HipCall scope(hsa_level::Claim::Address);
  const hipError_t r = call();
  if (!scope.outermost() || !recording()) return r;
  ErrnoKeeper keep;
  AllocRecord a = outcome(r == hipSuccess);
  scope.settle(r == hipSuccess ? a.address : 0);
  if (r == hipSuccess && a.address == 0) return r;  // size 0: HIP succeeds with no memory
  record_hip_alloc(api, kind, kind == Kind::HostPinned ? -1 : current_hip_device(), r, a);
  return r;
}

// ... for the calls with one address out-parameter and the size as asked.
template <typename Call>
hipError_t allocate(Api api, Kind kind, void** ptr, uint64_t size, Call&& call) {
  return allocate(api, kind, call, [&](bool ok) { return AllocRecord{ok && ptr != nullptr ? address_of(*ptr) : 0, size}; });
}

// The common shape of a wrapped HIP release: recorded before the call, refused after; whatever the
// runtime allocates meanwhile is its own.
template <typename Call>
hipError_t release(Op op, Api api, Kind kind, uint64_t address, Call&& call, uint64_t size = 0, uint64_t stream = 0,
                   uint64_t object = 0) {
  hsa_level::HipCall scope(hsa_level::Claim::None);
  if (!scope.outermost()) return call();
  return record_around_release(op, api, kind, address, call, size, stream, object);
}

}  // namespace gmp::shim::hip
