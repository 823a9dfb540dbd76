// Primary contexts and the thread-local context stack.
//
// One primary context per device, created at cuInit and never destroyed: releasing the last
// reference only drops the retain count (memory stays allocated). The current context is the
// top of a per-thread stack; cuCtxSetCurrent replaces the top, push/pop grow and shrink it.
// cuCtxGetDevice/cuCtxSynchronize exist in both ABIs, as in CUDA 13: the original (no context
// argument) and _v2 (explicit context, NULL meaning the current one).
#include "fake_capture.h"

#include <vector>

namespace fakecuda {

namespace {
thread_local std::vector<CUctx_st*> tls_stack;
}

CUctx_st* current_ctx() { return tls_stack.empty() ? nullptr : tls_stack.back(); }

CUresult current_device(int* dev) {
  CUctx_st* ctx = current_ctx();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = ctx->device;
  return CUDA_SUCCESS;
}

bool valid_ctx_locked(CUctx_st* ctx) {
  if (ctx == nullptr) return false;
  for (const Device& d : state().devices) {
    if (d.primary == ctx) return true;
  }
  return false;
}

}  // namespace fakecuda

using namespace fakecuda;

namespace {

CUresult primary_release(CUdevice dev) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* ctx = state().devices[static_cast<size_t>(dev)].primary;
  if (ctx->refcount <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  --ctx->refcount;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  FAKE_REQUIRE_INIT(lock);
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* ctx = state().devices[static_cast<size_t>(dev)].primary;
  ++ctx->refcount;
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primary_release(dev); }

CUresult fake_cuDevicePrimaryCtxRelease_v1(CUdevice dev) { return primary_release(dev); }

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  FAKE_REQUIRE_INIT(lock);
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = state().devices[static_cast<size_t>(dev)].primary->refcount > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  FAKE_REQUIRE_INIT(lock);
  if (ctx != nullptr && !valid_ctx_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (tls_stack.empty()) {
    if (ctx != nullptr) tls_stack.push_back(ctx);
  } else if (ctx == nullptr) {
    tls_stack.pop_back();
  } else {
    tls_stack.back() = ctx;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  FAKE_REQUIRE_INIT(lock);
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = current_ctx();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  FAKE_REQUIRE_INIT(lock);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  *device = dev;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  FAKE_REQUIRE_INIT(lock);
  if (!valid_ctx_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  tls_stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  FAKE_REQUIRE_INIT(lock);
  if (tls_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  CUctx_st* top = tls_stack.back();
  tls_stack.pop_back();
  if (pctx != nullptr) *pctx = top;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  FAKE_REQUIRE_INIT(lock);
  maybe_raise("cuCtxSynchronize");
  FAKE_UNSAFE_CALL();
  if (current_ctx() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  shrink_pools_on_sync_locked();
  return CUDA_SUCCESS;
}

// CUDA 13 ABIs (cuGetProcAddress version >= 13000): explicit context, NULL = current.
CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  FAKE_REQUIRE_INIT(lock);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) ctx = current_ctx();
  if (ctx == nullptr || !valid_ctx_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  FAKE_REQUIRE_INIT(lock);
  maybe_raise("cuCtxSynchronize_v2");
  FAKE_UNSAFE_CALL();
  if (ctx == nullptr) ctx = current_ctx();
  if (ctx == nullptr || !valid_ctx_locked(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  shrink_pools_on_sync_locked();
  return CUDA_SUCCESS;
}

}  // extern "C"
