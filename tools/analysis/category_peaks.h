// Each device's category peaks for one run directory, from a replay (run_analysis.h) without
// symbols or timeline: what `check --max-category` compares (docs/check.md).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "category_levels.h"

namespace gmp::analysis {

struct RunCategoryPeaks {
  bool decided = false;
  std::string why_undecided;           // when not decided
  std::map<int, CategoryBytes> peaks;  // by device, where the bridge attached
};

// nullopt with a one-line `error` when the run cannot be replayed.
std::optional<RunCategoryPeaks> category_peaks(const std::string& dir, std::string& error);

}  // namespace gmp::analysis
