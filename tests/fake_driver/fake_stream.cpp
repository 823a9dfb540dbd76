// Streams and events. Nothing runs asynchronously, so every synchronisation call only applies
// the pool shrink rule (see fake_pool.cpp). Synchronising and querying are potentially unsafe
// during a capture (fake_capture.cpp); doing so on a capturing stream itself always invalidates
// its capture.
#include "fake_capture.h"

namespace fakecuda {

CUresult stream_device_locked(CUstream s, int* dev) {
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
    return current_device(dev);
  }
  if (state().streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *dev = s->device;
  return CUDA_SUCCESS;
}

}  // namespace fakecuda

using namespace fakecuda;

namespace {

// The capture rule for a call that waits on or queries stream s: the general rule, and in
// every mode an error that invalidates the capture of s itself.
bool stream_wait_prohibited_locked(CUstream s) {
  bool prohibited = unsafe_call_prohibited_locked();
  if (Capture* c = capture_of_locked(s)) {
    invalidate_capture_locked(c);
    prohibited = true;
  }
  return prohibited;
}

CUresult stream_synchronize(CUstream s) {
  FAKE_REQUIRE_INIT(lock);
  int dev = 0;
  if (CUresult r = stream_device_locked(s, &dev); r != CUDA_SUCCESS) return r;
  if (stream_wait_prohibited_locked(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  shrink_pools_on_sync_locked();
  return CUDA_SUCCESS;
}

// Work is always complete here.
CUresult stream_query(CUstream s) {
  FAKE_REQUIRE_INIT(lock);
  int dev = 0;
  if (CUresult r = stream_device_locked(s, &dev); r != CUDA_SUCCESS) return r;
  if (stream_wait_prohibited_locked(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

// Safe on an idle stream; on a capturing one it fails and invalidates the capture in every mode,
// relaxed included (measured on driver 580).
CUresult stream_get_device(CUstream s, CUdevice* device) {
  FAKE_REQUIRE_INIT(lock);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = stream_device_locked(s, &dev); r != CUDA_SUCCESS) return r;
  if (Capture* c = capture_of_locked(s)) {
    invalidate_capture_locked(c);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  *device = dev;
  return CUDA_SUCCESS;
}

CUresult stream_get_ctx(CUstream hStream, CUcontext* pctx, CUgreenCtx* pGreenCtx) {
  FAKE_REQUIRE_INIT(lock);
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (pGreenCtx != nullptr) *pGreenCtx = nullptr;
  if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) {
    CUctx_st* ctx = current_ctx();
    if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *pctx = ctx;
    return CUDA_SUCCESS;
  }
  if (state().streams.count(hStream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *pctx = hStream->ctx;
  return CUDA_SUCCESS;
}

CUresult event_record(CUevent hEvent, CUstream hStream) {
  FAKE_REQUIRE_INIT(lock);
  if (state().events.count(hEvent) == 0) return CUDA_ERROR_INVALID_HANDLE;
  int dev = 0;
  if (CUresult r = stream_device_locked(hStream, &dev); r != CUDA_SUCCESS) return r;
  // In a capture the event remembers the capture and the stream's dependencies, so a stream
  // waiting on it joins the capture (fake_capture.cpp).
  cuuint64_t capture_id = 0;
  std::vector<CUgraphNode> deps;
  if (Capture* c = capture_of_locked(hStream)) {
    if (CUresult r = capture_check_active_locked(c); r != CUDA_SUCCESS) return r;
    capture_id = c->id;
    deps = hStream->capture_deps;
  }
  hEvent->device = dev;
  hEvent->capture_id = capture_id;
  hEvent->capture_deps = std::move(deps);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  FAKE_REQUIRE_INIT(lock);
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = current_ctx();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  auto* s = new CUstream_st{ctx->device, ctx, Flags};
  state().streams.insert(s);
  *phStream = s;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  FAKE_REQUIRE_INIT(lock);
  if (state().streams.count(hStream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  capture_forget_stream_locked(hStream);
  state().streams.erase(hStream);
  delete hStream;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) { return stream_synchronize(hStream); }
CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return stream_synchronize(hStream); }

CUresult cuStreamQuery(CUstream hStream) { return stream_query(hStream); }
CUresult cuStreamQuery_ptsz(CUstream hStream) { return stream_query(hStream); }

CUresult cuStreamGetDevice(CUstream hStream, CUdevice* device) {
  return stream_get_device(hStream, device);
}
CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device) {
  return stream_get_device(hStream, device);
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  return stream_get_ctx(hStream, pctx, nullptr);
}
CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) {
  return stream_get_ctx(hStream, pctx, nullptr);
}
// CUDA 12.5 ABI: also reports the green context (always NULL here).
CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext* pctx, CUgreenCtx* pGreenCtx) {
  return stream_get_ctx(hStream, pctx, pGreenCtx);
}
CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pctx, CUgreenCtx* pGreenCtx) {
  return stream_get_ctx(hStream, pctx, pGreenCtx);
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  FAKE_REQUIRE_INIT(lock);
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (current_ctx() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  auto* e = new CUevent_st{Flags, -1};
  state().events.insert(e);
  *phEvent = e;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) { return event_record(hEvent, hStream); }
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return event_record(hEvent, hStream);
}

CUresult cuEventSynchronize(CUevent hEvent) {
  FAKE_REQUIRE_INIT(lock);
  if (state().events.count(hEvent) == 0) return CUDA_ERROR_INVALID_HANDLE;
  FAKE_UNSAFE_CALL();
  shrink_pools_on_sync_locked();
  return CUDA_SUCCESS;
}

// Every recorded event has completed.
CUresult cuEventQuery(CUevent hEvent) {
  FAKE_REQUIRE_INIT(lock);
  if (state().events.count(hEvent) == 0) return CUDA_ERROR_INVALID_HANDLE;
  FAKE_UNSAFE_CALL();
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  FAKE_REQUIRE_INIT(lock);
  if (state().events.erase(hEvent) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete hEvent;
  return CUDA_SUCCESS;
}

}  // extern "C"
