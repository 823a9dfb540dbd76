// A run directory as the tools see it: manifest, summary (or one rebuilt from the trace when the
// process died before writing it), and what the event counts say about the trace.
//
// What is refused (docs/testing.md, "What the tools refuse"): a path that is not a directory; a
// directory with neither manifest.json nor trace.gmpt; any of the run's files that exists but is
// not a regular file, is sparse, is not valid JSON (or nests deeper than json_input.h allows) or is
// not a trace. A missing summary.json is rebuilt from the trace.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "manifest_record.h"
#include "progress.h"
#include "summary_figures.h"
#include "summary_builder.h"

namespace gmp::reader {

struct RunDirectory {
  std::string path;
  ManifestRecord manifest;    // all defaults when missing
  bool has_manifest = false;  // manifest.json holds a JSON object
  // summary.json as read, passed through to report --json and the HTML page's data; or the JSON of
  // a summary rebuilt from the trace.
  nlohmann::json summary;
  Summary figures;  // the same, read (format/summary.h): what the tools look at
  bool summary_rebuilt = false;
  std::string rebuild_reason;
  uint64_t trace_truncated_bytes = 0;
  EventCounts events;  // summary.json's counts against the records trace.gmpt holds
};

// Opens `path`; nullopt with `error` (one line) when it is not a readable run directory. A summary
// rebuilt from the trace ticks `progress`.
std::optional<RunDirectory> open_run_directory(const std::string& path, std::string& error,
                                               Progress* progress = nullptr);

// Replays a trace through the accounting and returns the summary it implies (clean_exit false).
std::optional<nlohmann::json> rebuild_summary(const std::string& trace_path, const nlohmann::json& manifest,
                                              uint64_t* truncated_bytes, std::string& error);

}  // namespace gmp::reader
