// Human-readable figures for the command's output.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "run_analysis.h"

namespace gmp::tool {

std::string human_duration_ns(uint64_t ns);  // "1.234 s", "12.5 ms"

// A size as PyTorch's format_size() prints it in its messages, so that ours compare character for
// character: up to 1024 bytes "N bytes", then "%.2f KiB" up to 1 MiB, "%.2f MiB" up to 1 GiB, else
// "%.2f GiB" (its bounds are inclusive).
std::string pytorch_size_text(uint64_t bytes);

// "1 allocation", "3 allocations", "2 processes": a count with its noun (plural -es after s, x, ch, sh).
std::string counted(uint64_t n, const std::string& noun);

// "WARNING alert", "cuMemAlloc_v2 of 2.00 GiB failed (CUDA_ERROR_OUT_OF_MEMORY)", ...
std::string marker_label(const analysis::Marker& m);

}  // namespace gmp::tool
