// The JSON form of tensors by category, shared by report --json, the HTML page's data and
// `oom --json` (apart from analysis_json.* so the OOM explanation needs no whole-run analysis).
#pragma once

#include <nlohmann/json.hpp>

#include "category_split.h"

namespace gmp::analysis {

// Tensors by category (tensor_categories.h): {"decided", "why_undecided" (only when not), "phase"
// ({"kind", "step", "micro_batch"} or null), "total", "categories": [{"category", "bytes", "count",
// "share", "largest": [{"name", "bytes", "count"}]}] from parameters to other, then unknown; zeros included}.
nlohmann::json category_split_json(const CategorySplit& split, bool categories_setting);

}  // namespace gmp::analysis
