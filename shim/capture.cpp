#include "capture.h"

#include <atomic>

#include "real_driver.h"

namespace gmp::shim::capture {
namespace {

std::atomic<int> g_open{0};

}  // namespace

bool any_open() { return g_open.load(std::memory_order_acquire) > 0; }

// seq_cst: a capture is counted before the driver starts it, so no thread that sees the count at 0
// can be looking at a stream that captures.
void opening() { g_open.fetch_add(1, std::memory_order_seq_cst); }

void closed() {
  int n = g_open.load(std::memory_order_relaxed);
  while (n > 0 && !g_open.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) {
  }
}

Info of(CUstream stream) {
  Info info;
  if (!any_open()) return info;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (auto get = GMP_REAL(cuStreamGetCaptureInfo_v3); get != nullptr) {
    cuuint64_t id = 0;
    CUgraph graph = nullptr;
    if (get(stream, &status, &id, &graph, nullptr, nullptr, nullptr) != CUDA_SUCCESS) return info;
    info.id = id;
    info.graph = graph;
  } else if (auto is = GMP_REAL(cuStreamIsCapturing); is == nullptr || is(stream, &status) != CUDA_SUCCESS) {
    return info;
  }
  info.capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
  return info;
}

Relaxed::Relaxed() : saved_(CU_STREAM_CAPTURE_MODE_RELAXED), exchanged_(false) {
  auto exchange = GMP_REAL(cuThreadExchangeStreamCaptureMode);
  exchanged_ = exchange != nullptr && exchange(&saved_) == CUDA_SUCCESS;
}

Relaxed::~Relaxed() {
  if (!exchanged_) return;
  auto exchange = GMP_REAL(cuThreadExchangeStreamCaptureMode);
  exchange(&saved_);
}

void reset() { g_open.store(0, std::memory_order_relaxed); }

}  // namespace gmp::shim::capture
