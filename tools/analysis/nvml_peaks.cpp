#include "nvml_peaks.h"

#include <algorithm>

namespace gmp::analysis {

void NvmlPeaks::add(const ReplayStep& step) {
  const Event& e = step.event;
  if (e.op != Op::Sample || e.device < 0) return;
  NvmlPeak& p = peaks_[e.device];
  p.device_used = std::max(p.device_used, e.size);
  // UINT64_MAX: the sample could not name the process's usage.
  if (e.value != UINT64_MAX) p.process = std::max(p.process, e.value);
}

}  // namespace gmp::analysis
