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

// Before an out-of-memory failure is recorded: what the driver says is free on the current
// context's device, for the OOM bundle (3 us, paid only on this path).
inline void record_driver_memory(int device) {
  auto info = GMP_REAL(cuMemGetInfo_v2);
  size_t free = 0, total = 0;
  if (device < 0 || info == nullptr || info(&free, &total) != CUDA_SUCCESS) return;
  session_record(device, [&](Event& e) {
    DriverMemoryRecord{total, free}.to_event(e);
    e.api = Api::Collector;
  });
}

// Records an allocation call's outcome. On out-of-memory, the call does not return to its caller
// until the collector has written the OOM bundle (bounded by GPUMEMPROF_OOM_WAIT_MS).
inline void record_alloc(Api api, Kind kind, int device, CUresult r, AllocRecord a) {
  uint32_t stack;
  if (!prepare_allocation_event(&stack)) return;
  const bool oom = r == CUDA_ERROR_OUT_OF_MEMORY;
  if (oom && kind != Kind::HostPinned) record_driver_memory(device);
  if (r != CUDA_SUCCESS) a.address = 0;
  session_record(device, [&](Event& e) {
    a.to_event(e);
    e.api = api;
    e.kind = kind;
    e.result = static_cast<int16_t>(r);
    e.stack_id = stack;
  });
  if (oom) session_wait_for_collector();
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
inline void record_release_failed(Api api, Kind kind, uint64_t address, CUresult r) {
  session_record(-1, [&](Event& e) {
    e.op = Op::ReleaseFailed;
    e.api = api;
    e.kind = kind;
    e.address = address;
    e.result = static_cast<int16_t>(r);
  });
}

// Brackets the driver's release call `call` with a release record before it and, if the driver
// refuses, a ReleaseFailed after it. `address` 0 (a NULL free) is passed through unrecorded.
template <typename Call>
CUresult record_around_release(Op op, Api api, Kind kind, uint64_t address, Call&& call, uint64_t size = 0,
                               uint64_t stream = 0, uint64_t object = 0) {
  const bool rec = address != 0 && recording();
  ErrnoKeeper keep;
  if (rec) record_release(op, api, kind, address, size, stream, object);
  keep.restore();
  const CUresult r = call();
  keep.capture();
  if (rec && r != CUDA_SUCCESS) record_release_failed(api, kind, address, r);
  return r;
}

}  // namespace gmp::shim
