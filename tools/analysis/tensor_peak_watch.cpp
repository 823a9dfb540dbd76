#include "tensor_peak_watch.h"

namespace gmp::analysis {

void TensorPeakWatch::start(const Accounting& acc, uint64_t index) {
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal >= 0) peaks_[ordinal] = {d.framework.allocated.current, index};
  }
}

void TensorPeakWatch::add(const ReplayStep& step) {
  const Event& e = step.event;
  if (e.op == Op::TensorAlloc && e.device >= 0) {
    TensorPeak& p = peaks_[e.device];
    const uint64_t tensors = step.acc.devices().at(e.device).framework.allocated.current;
    if (tensors > p.bytes) p = {tensors, step.index};
  } else if (e.op == Op::FrameworkAttach && e.result != 1) {
    for (auto& [_, p] : peaks_) p = {};  // detached: what came before is void
  }
}

TensorPeak TensorPeakWatch::of(int device) const {
  auto it = peaks_.find(device);
  return it != peaks_.end() ? it->second : TensorPeak{};
}

}  // namespace gmp::analysis
