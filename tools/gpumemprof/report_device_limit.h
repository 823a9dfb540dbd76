// The device-limit section of `gpumemprof report` (docs/device-limit.md): whether the run fits the
// smaller GPU it rehearsed. Prints nothing for a device that ran without a limit.
#pragma once

#include "run_analysis.h"

namespace gmp::tool {

void print_device_limit(const analysis::DeviceAnalysis& d);

}  // namespace gmp::tool
