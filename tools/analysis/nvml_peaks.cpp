#include "nvml_peaks.h"
#include "records.h"

#include <algorithm>

namespace gmp::analysis {

void NvmlPeaks::add(const ReplayStep& step) {
  const Event& e = step.event;
  if (e.op != Op::Sample || e.device < 0) return;
  const auto s = SampleRecord::from_event(e);
  NvmlPeak& p = peaks_[e.device];
  p.device_used = std::max(p.device_used, s.device_used);
  if (s.process_known()) p.process = std::max(p.process, s.process_used);
}

}  // namespace gmp::analysis
