// Stream-ordered allocation and memory pools. The pool's reserved bytes are read from the driver off
// the allocation path: on the collector's passes, after trims, at synchronisation points (where the
// driver shrinks pools above their release threshold) and at exit, each reading with the pool's
// high watermark, so the peak's value stays the driver's. On a
// stream that captures, an allocation or a free is a memory node of the capture's graph: nothing is
// allocated or released then, and the stream is never asked its device (capture.h).
#include "capture.h"
#include "../device_limit/device_limit.h"
#include "export.h"
#include "graph_memory.h"
#include "pool_tracker.h"
#include "record.h"

using namespace gmp;
using namespace gmp::shim;

namespace {

// The real per-thread-stream free, which undoes a pool growth the device limit refuses (GMP_REAL
// needs its wrapper declared, and that comes further down).
limit::FreeAsync free_async_ptsz() { return reinterpret_cast<limit::FreeAsync>(real(Entry::cuMemFreeAsync_ptsz)); }

void record_pool_alloc(Api api, CUresult r, CUdeviceptr* dptr, size_t size, CUstream stream, CUmemoryPool pool,
                       int device) {
  ErrnoKeeper keep;
  // The pool is read only when this allocation may have grown it (docs/accounting.md, Pool); else
  // the collector's passes and the synchronisations read it, with its high watermark. A failed
  // allocation is read at once: its OOM bundle says what the pool held.
  uint64_t reserved = kNoReading;
  if (pool != nullptr) {
    if (r == CUDA_SUCCESS) {
      reserved = pools::read_after_allocation(pool, device, size);
    } else {
      reserved = pools::failed_allocation(pool, device);
    }
  }
  record_alloc(api, Kind::Pool, device, r,
               {.address = dptr ? *dptr : 0,
                .size = size,
                .stream = reinterpret_cast<uint64_t>(stream),
                .pool = reinterpret_cast<uint64_t>(pool),
                .pool_reserved = reserved});
}

// A memory node captured on a stream: where the driver will allocate it at launch is the pool's
// device, or the stream's, which only the current context can tell without breaking the capture.
void record_captured(Op op, Api api, CUresult r, const capture::Info& info, uint64_t address, uint64_t size,
                     CUstream stream, int device) {
  if (r != CUDA_SUCCESS || !recording()) return;
  ErrnoKeeper keep;
  if (device < 0) device = only_device() >= 0 ? only_device() : current_device();
  graph_memory::record_node(op, api, info.graph, info.id, stream, address, size, device);
}

template <typename Real>
CUresult alloc_async(Api api, Real real, limit::FreeAsync free, CUdeviceptr* dptr, size_t size, CUstream stream) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (const capture::Info info = capture::of(stream); info.capturing) {
    const CUresult r = real(dptr, size, stream);
    record_captured(Op::GraphAllocNode, api, r, info, dptr ? *dptr : 0, size, stream, -1);
    return r;
  }
  // The stream's device (a driver call for a stream of its own) is looked up once: before the
  // call under a limit, else after it, for the record.
  int device = -1;
  CUresult r;
  if (limit::on()) {
    device = stream_device(stream);
    r = limit::pool(pools::current_pool(device), device, dptr, stream, free, [&] { return real(dptr, size, stream); });
  } else {
    r = real(dptr, size, stream);
  }
  if (recording()) {
    ErrnoKeeper keep;
    if (device < 0) device = stream_device(stream);
    record_pool_alloc(api, r, dptr, size, stream, pools::current_pool(device), device);
  }
  return r;
}

template <typename Real>
CUresult alloc_from_pool(Api api, Real real, limit::FreeAsync free, CUdeviceptr* dptr, size_t size, CUmemoryPool pool,
                         CUstream stream) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (const capture::Info info = capture::of(stream); info.capturing) {
    const CUresult r = real(dptr, size, pool, stream);
    record_captured(Op::GraphAllocNode, api, r, info, dptr ? *dptr : 0, size, stream, pools::known_device(pool));
    return r;
  }
  int device = -1;  // looked up once, as in alloc_async
  CUresult r;
  if (limit::on()) {
    device = stream_device(stream);
    r = limit::pool(pool, device, dptr, stream, free, [&] { return real(dptr, size, pool, stream); });
  } else {
    r = real(dptr, size, pool, stream);
  }
  if (recording()) {
    ErrnoKeeper keep;
    if (device < 0) device = stream_device(stream);
    record_pool_alloc(api, r, dptr, size, stream, pool, device);
  }
  return r;
}

template <typename Real>
CUresult free_async(Api api, Real real, CUdeviceptr dptr, CUstream stream) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (const capture::Info info = capture::of(stream); info.capturing) {
    const CUresult r = real(dptr, stream);
    record_captured(Op::GraphFreeNode, api, r, info, dptr, 0, stream, -1);
    return r;
  }
  // The driver takes linear pointers here too: what the limit counts for them goes with them.
  return record_around_release(Op::Free, api, Kind::Pool, dptr, [&] {
    return limit::on() ? limit::release(limit::Table::Linear, dptr, [&] { return real(dptr, stream); })
                       : real(dptr, stream);
  }, 0, reinterpret_cast<uint64_t>(stream));
}

template <typename Real, typename... Args>
CUresult synchronize(Real real, Args... args) {
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(args...);
  if (session_running()) {
    ErrnoKeeper keep;
    pools::refresh_all();
    graph_memory::refresh_all();
  }
  return r;
}

}  // namespace

GMP_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t size, CUstream s) {
  return alloc_async(Api::cuMemAllocAsync, GMP_REAL(cuMemAllocAsync), GMP_REAL(cuMemFreeAsync), dptr, size, s);
}
GMP_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t size, CUstream s) {
  return alloc_async(Api::cuMemAllocAsync_ptsz, GMP_REAL(cuMemAllocAsync_ptsz), free_async_ptsz(), dptr, size, s);
}
GMP_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t size, CUmemoryPool pool, CUstream s) {
  return alloc_from_pool(Api::cuMemAllocFromPoolAsync, GMP_REAL(cuMemAllocFromPoolAsync), GMP_REAL(cuMemFreeAsync),
                         dptr, size, pool, s);
}
GMP_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t size, CUmemoryPool pool, CUstream s) {
  return alloc_from_pool(Api::cuMemAllocFromPoolAsync_ptsz, GMP_REAL(cuMemAllocFromPoolAsync_ptsz),
                         free_async_ptsz(), dptr, size, pool, s);
}
GMP_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  return free_async(Api::cuMemFreeAsync, GMP_REAL(cuMemFreeAsync), dptr, s);
}
GMP_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) {
  return free_async(Api::cuMemFreeAsync_ptsz, GMP_REAL(cuMemFreeAsync_ptsz), dptr, s);
}

GMP_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  auto real = GMP_REAL(cuMemPoolCreate);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(pool, props);
  if (recording() && r == CUDA_SUCCESS && pool != nullptr) {
    ErrnoKeeper keep;
    const int device =
        props != nullptr && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? props->location.id : -1;
    pools::read_reserved(*pool, device);  // registers it for synchronisation re-reads
    record_pool_create(Api::cuMemPoolCreate, device, reinterpret_cast<uint64_t>(*pool));
  }
  return r;
}

GMP_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  auto real = GMP_REAL(cuMemPoolDestroy);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const auto handle = reinterpret_cast<uint64_t>(pool);
  // Its last figures first: the readings are off the allocation path, and its high watermark
  // would go with it.
  if (recording()) {
    ErrnoKeeper keep;
    if (PoolReading reading; pools::read_with_high(pool, -1, &reading)) {
      session_record(reading.device, [&](Event& e) { e = pool_reserved_event(reading, Api::cuMemPoolDestroy); });
    }
  }
  const CUresult r = record_around_release(Op::PoolDestroy, Api::cuMemPoolDestroy, Kind::Pool, handle,
                                           [&] { return real(pool); }, 0, 0, handle);
  if (r == CUDA_SUCCESS) pools::forget(pool);
  return r;
}

GMP_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep_bytes) {
  auto real = GMP_REAL(cuMemPoolTrimTo);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(pool, keep_bytes);
  // The figures after the trim, with the high watermark it leaves as it was.
  if (recording() && r == CUDA_SUCCESS) {
    ErrnoKeeper keep;
    if (PoolReading after; pools::read_with_high(pool, -1, &after)) {
      session_record(-1, [&](Event& e) { e = pool_reserved_event(after, Api::cuMemPoolTrimTo); });
    }
  }
  return r;
}

GMP_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  auto real = GMP_REAL(cuDeviceSetMemPool);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(dev, pool);
  if (r == CUDA_SUCCESS) pools::set_current_pool(dev, pool);
  return r;
}

GMP_EXPORT CUresult cuStreamSynchronize(CUstream s) { return synchronize(GMP_REAL(cuStreamSynchronize), s); }
GMP_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) {
  return synchronize(GMP_REAL(cuStreamSynchronize_ptsz), s);
}
GMP_EXPORT CUresult cuCtxSynchronize() { return synchronize(GMP_REAL(cuCtxSynchronize)); }
// CUDA 13's runtime synchronizes a context through the _v2 ABI, which names the context.
GMP_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) { return synchronize(GMP_REAL(cuCtxSynchronize_v2), ctx); }
GMP_EXPORT CUresult cuEventSynchronize(CUevent ev) { return synchronize(GMP_REAL(cuEventSynchronize), ev); }
