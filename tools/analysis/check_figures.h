// The figures of summary.json a gate reads (docs/check.md), held to being counts. The readers are
// tolerant by design (format/json_fields.h: a value of the wrong type reads as 0), which suits a
// report but would let a gate pass on a peak it never saw: "4.5e9", -5, "x", null or a number above
// 2^64 - 1 would read as a peak of 0 B.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gmp::analysis {

// Why `summary` (summary.json as read) is not a gate's input: the first figure a limit reads that
// is not a count, or missing where every summary.json has it, as "devices[0].allocated_bytes.peak is
// 4.5e+09, not a count". nullopt when every one is. Keys that older runs lack (by_kind.graph,
// framework, framework.private_pools, failed_allocations) may be absent; present, they must be valid.
std::optional<std::string> invalid_figure(const nlohmann::json& summary);

}  // namespace gmp::analysis
