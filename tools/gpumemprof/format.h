// Human-readable figures for the command's output.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "run_analysis.h"

namespace gmp::tool {

std::string human_bytes(uint64_t bytes);  // "1.50 GiB", "512 B"
std::string human_duration_ns(uint64_t ns);  // "1.234 s", "12.5 ms"

// "1 allocation", "3 allocations": a count with its noun.
std::string counted(uint64_t n, const std::string& noun);

// "WARNING alert", "cuMemAlloc_v2 of 2.00 GiB failed (CUDA_ERROR_OUT_OF_MEMORY)", ...
std::string marker_label(const analysis::Marker& m);

// The number at `path` in `j` (e.g. {"allocated_bytes", "peak"}), or 0 where there is none: the
// tools read summaries from crashed or older runs and must not throw on a missing key.
uint64_t json_u64(const nlohmann::json& j, std::initializer_list<const char*> path);

}  // namespace gmp::tool
