#include "report_device_limit.h"

#include <cstdio>

#include "bytes_text.h"
#include "count_text.h"
#include "human_text.h"

namespace gmp::tool {

void print_device_limit(const analysis::DeviceAnalysis& d) {
  const analysis::DeviceLimitFigures& l = d.limit;
  if (l.limit == 0) return;
  // A refused allocation means the job needed more than the limit, whatever the peak reached.
  const bool fits = l.refusals == 0 && l.peak <= l.limit;
  std::printf("  device limit (GPUMEMPROF_DEVICE_LIMIT): %s, peak %s against limit %s, headroom %s\n",
              fits ? "fits" : "does not fit", bytes_text(l.peak).c_str(), bytes_text(l.limit).c_str(),
              bytes_text(l.peak < l.limit ? l.limit - l.peak : 0).c_str());
  std::printf("    the peak counts reserved memory and %s of context and modules (NVML's figure for the process)\n",
              bytes_text(l.context).c_str());
  if (l.refusals > 0) {
    std::printf("    %s refused by the limit, the first %s over it\n", counted(l.refusals, "allocation").c_str(),
                bytes_text(l.first_excess).c_str());
  }
}

}  // namespace gmp::tool
