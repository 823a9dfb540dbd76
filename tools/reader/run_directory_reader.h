// A run directory as the tools see it: manifest, summary (or one rebuilt from the trace when the
// process died before writing it), and the trace itself.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gmp::reader {

struct RunDirectory {
  std::string path;
  nlohmann::json manifest;  // null when missing or unreadable
  nlohmann::json summary;   // from summary.json, or rebuilt
  bool summary_rebuilt = false;
  std::string rebuild_reason;
  uint64_t trace_truncated_bytes = 0;
};

// Opens `path`; nullopt with `error` (one line) when it is not a readable run directory.
std::optional<RunDirectory> open_run_directory(const std::string& path, std::string& error);

// Replays a trace through the accounting and returns the summary it implies (clean_exit false).
std::optional<nlohmann::json> rebuild_summary(const std::string& trace_path, const nlohmann::json& manifest,
                                              uint64_t* truncated_bytes, std::string& error);

}  // namespace gmp::reader
