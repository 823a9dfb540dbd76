// Building events in the wrappers. A wrapper forwards first and records after (allocations), or
// records before and reports a refusal after (releases), so the event order never shows an
// address live twice (docs/design.md §Accounting).
#pragma once

#include <cuda.h>

#include <cerrno>
#include <cstdint>

#include "event.h"
#include "records.h"
#include "../collector/seam.h"
#include "stack_capture.h"
#include "real_driver.h"

namespace gmp::shim {

// Keeps errno exactly as the driver left it, whatever recording does.
class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  ~ErrnoKeeper() { errno = saved_; }
  void restore() const { errno = saved_; }
  void capture() { saved_ = errno; }

 private:
  int saved_;
};

inline bool recording() { return session_enabled(); }

// 0 when the process sees exactly one device (the usual case under CUDA_VISIBLE_DEVICES), so hot
// paths need not ask the driver which device a stream or context is on; -1 otherwise.
int only_device();

// The current context's device, or -1 without a context.
inline int current_device() {
  auto get = GMP_REAL(cuCtxGetDevice);
  CUdevice d = -1;
  if (get == nullptr || get(&d) != CUDA_SUCCESS) return -1;
  return d;
}

// The device of a stream's work: the only device, the stream's (a driver call), or for the default
// streams the current context's. Never for a stream that captures: asking one its device invalidates
// the capture in every mode (capture.h).
inline int stream_device(CUstream s) {
  if (const int only = only_device(); only >= 0) return only;
  const auto v = reinterpret_cast<uintptr_t>(s);
  const bool default_stream = v == 0 || v == reinterpret_cast<uintptr_t>(CU_STREAM_LEGACY) ||
                              v == reinterpret_cast<uintptr_t>(CU_STREAM_PER_THREAD);
  if (!default_stream) {
    auto get = GMP_REAL(cuStreamGetDevice);
    CUdevice d = -1;
    if (get != nullptr && get(s, &d) == CUDA_SUCCESS) return d;
  }
  return current_device();
}

// What the runtime says is free and total on a device, just after an out-of-memory failure, for
// the OOM bundle.
inline void record_device_memory(int device, uint64_t total, uint64_t free) {
  session_record(device, [&](Event& e) {
    DriverMemoryRecord{total, free}.to_event(e);
    e.api = Api::Collector;
  });
}

// Before an out-of-memory failure is recorded: what the driver says is free on the current
// context's device (3 us, paid only on this path).
inline void record_driver_memory(int device) {
  auto info = GMP_REAL(cuMemGetInfo_v2);
  size_t free = 0, total = 0;
  if (device < 0 || info == nullptr || info(&free, &total) != CUDA_SUCCESS) return;
  record_device_memory(device, total, free);
}

// Records an allocation call's outcome (`result`: the runtime's status, 0 = success, 2 = out of
// memory in both CUDA and HIP). On out-of-memory, `read_memory(device)` records the device's
// memory first, and the call does not return to its caller until the collector has written the
// OOM bundle (bounded by GPUMEMPROF_OOM_WAIT_MS).
template <typename ReadMemory>
inline void record_alloc_with(Api api, Kind kind, int device, int result, AllocRecord a, ReadMemory&& read_memory) {
  uint32_t stack;
  if (!prepare_allocation_event(&stack)) return;
  const bool oom = result == kOutOfMemory;
  if (oom && kind != Kind::HostPinned) read_memory(device);
  if (result != 0) a.address = 0;
  session_record(device, [&](Event& e) {
    a.to_event(e);
    e.api = api;
    e.kind = kind;
    e.result = static_cast<int16_t>(result);
    e.stack_id = stack;
  });
  if (oom) session_wait_for_collector();
}

inline void record_alloc(Api api, Kind kind, int device, CUresult r, AllocRecord a) {
  record_alloc_with(api, kind, device, r, a, record_driver_memory);
}

// A VMM physical allocation's outcome (`handle` 0 when it failed), as record_alloc_with.
template <typename ReadMemory>
inline void record_vmm_create(Api api, int device, int result, uint64_t handle, uint64_t size,
                              ReadMemory&& read_memory) {
  uint32_t stack;
  if (!prepare_allocation_event(&stack)) return;
  const bool oom = result == kOutOfMemory;
  if (oom) read_memory(device);
  session_record(device, [&](Event& e) {
    e.op = Op::VmmCreate;
    e.api = api;
    e.kind = Kind::Vmm;
    e.result = static_cast<int16_t>(result);
    e.address = result == 0 ? handle : 0;
    e.size = size;
    e.stack_id = stack;
  });
  if (oom) session_wait_for_collector();
}

// A VMM mapping's outcome. Device -1: the mapping's device is its handle's, which the collector knows.
inline void record_vmm_map(Api api, int result, VmmMapRecord m) {
  uint32_t stack;
  if (!prepare_allocation_event(&stack)) return;
  session_record(-1, [&](Event& e) {
    m.to_event(e);
    e.api = api;
    e.kind = Kind::Vmm;
    e.result = static_cast<int16_t>(result);
    e.stack_id = stack;
  });
}

// A stream-ordered pool created on `device`.
inline void record_pool_create(Api api, int device, uint64_t pool) {
  session_record(device, [&](Event& e) {
    PoolRecord{pool}.to_event(e, Op::PoolCreate);
    e.api = api;
    e.kind = Kind::Pool;
  });
}

// A release (Free, VmmRelease, VmmUnmap, PoolDestroy), recorded before the driver call.
inline void record_release(Op op, Api api, Kind kind, uint64_t address, uint64_t size = 0, uint64_t stream = 0,
                           uint64_t object = 0) {
  session_record(-1, [&](Event& e) {
    e.op = op;
    e.api = api;
    e.kind = kind;
    e.address = address;
    e.size = size;
    e.stream = stream;
    e.object = object;
  });
}

// The driver refused the release this thread recorded just before.
inline void record_release_failed(Api api, Kind kind, uint64_t address, int r) {
  session_record(-1, [&](Event& e) {
    e.op = Op::ReleaseFailed;
    e.api = api;
    e.kind = kind;
    e.address = address;
    e.result = static_cast<int16_t>(r);
  });
}

// Brackets the runtime's release call `call` with a release record before it and, if the runtime
// refuses (any status but 0), a ReleaseFailed after it. `address` 0 (a NULL free) is passed through
// unrecorded.
template <typename Call>
auto record_around_release(Op op, Api api, Kind kind, uint64_t address, Call&& call, uint64_t size = 0,
                           uint64_t stream = 0, uint64_t object = 0) {
  const bool rec = address != 0 && recording();
  ErrnoKeeper keep;
  if (rec) record_release(op, api, kind, address, size, stream, object);
  keep.restore();
  const auto r = call();
  keep.capture();
  if (rec && r != 0) record_release_failed(api, kind, address, static_cast<int>(r));
  return r;
}

}  // namespace gmp::shim
