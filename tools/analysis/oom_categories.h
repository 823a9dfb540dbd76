// The tensors live at a framework OOM by category (tensor_categories.h): the run's trace replayed up
// to the framework's own figures for the failed request, which the bootstrap sends right after it
// labelled everything. A forward cut short by the OOM counts its tensors as activations.
#pragma once

#include <optional>
#include <string>

#include "attribution_reader.h"
#include "oom_bundle_schema.h"
#include "category_split.h"

namespace gmp::analysis {

// nullopt when the run's trace cannot be read or holds no framework OOM figures for `request`
// (`error` says which, one line; empty when there was simply nothing to split).
std::optional<CategorySplit> categories_at_oom(const std::string& run_dir, const reader::Attribution& attribution,
                                               const OomRequest& request, std::string& error);

}  // namespace gmp::analysis
