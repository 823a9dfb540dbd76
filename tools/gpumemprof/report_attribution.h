// The attribution sections of `gpumemprof report`'s text (docs/attribution.md, "Reading"): call
// sites with their stacks, ranges, marks and pauses. Each prints nothing when the run recorded
// nothing of its kind, so reports of runs without stacks or markers are unchanged.
#pragma once

#include <vector>

#include "run_analysis.h"

namespace gmp::tool {

// `indent`-indented "by call site:" list (no output when no allocation carried a stack id).
void print_call_sites(const analysis::RunAnalysis& run, const std::vector<analysis::CallSite>& sites, int indent);
void print_ranges(const analysis::RunAnalysis& run);
void print_marks(const analysis::RunAnalysis& run);
void print_pauses(const analysis::RunAnalysis& run);

}  // namespace gmp::tool
