// The names of the files of a run directory (docs/run-directory.md), written by the collector and
// looked for by the tools. The trace's name is trace_format.h's kTraceFileName; an OOM bundle's
// files are oom_bundle_schema.h's.
#pragma once

namespace gmp {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kSummaryFile = "summary.json";
inline constexpr const char* kAttributionFile = "attribution.jsonl";
inline constexpr const char* kLogFile = "gpumemprof.log";
inline constexpr const char* kAlertCommandLogFile = "alert_command.log";
inline constexpr const char* kLiveFile = "live.bin";  // live_file.h: the figures while the process runs
inline constexpr const char* kOomSubdirectory = "oom";  // OOM bundles, unless GPUMEMPROF_OOM_DIR says otherwise

}  // namespace gmp
