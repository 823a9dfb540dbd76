#include "folded.h"

namespace gmp::analysis {

std::string folded_stacks(const RunAnalysis& run) {
  std::string out;
  for (const auto& [_, d] : run.devices) append_folded(d.flame, out);  // devices by ordinal
  return out;
}

}  // namespace gmp::analysis
