// Folded stacks of a run: every device's flame graph of its allocated peak (flame.h) in the
// format flamegraph.pl, inferno and speedscope read: "GPU 0;main;train_step;alloc 1048576".
#pragma once

#include <string>

#include "run_analysis.h"

namespace gmp::analysis {

std::string folded_stacks(const RunAnalysis& run);

}  // namespace gmp::analysis
