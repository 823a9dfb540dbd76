#include "run_directory_reader.h"

#include <sys/stat.h>

#include "json_input.h"
#include "summary.h"
#include "summary_builder.h"
#include "trace_replay.h"
#include "run_directory_files.h"
#include "trace_format.h"

namespace gmp::reader {
namespace {

// The summary the events of `trace` (opened, nothing read yet) imply; nullopt with `error` when
// the trace turns out unreadable. A trace whose oldest segments were deleted starts from its
// checkpoint, which carries the whole run's figures up to there: the summary is the whole run's.
std::optional<Summary> replay_summary(TraceReplay& trace, const ManifestRecord& manifest, std::string& error) {
  trace.keep_run_peaks();
  while (trace.next()) {
  }
  if (trace.failed()) {
    error = trace.error();
    return std::nullopt;
  }
  SummaryContext ctx;
  ctx.clean_exit = false;
  ctx.ended_by = kEndedByUnknown;  // no summary.json: how the process ended is not known
  ctx.start_monotonic_ns = trace.start_ns();
  for (const DeviceEntry& d : manifest.devices) {
    if (d.ordinal && d.name) ctx.device_names[*d.ordinal] = *d.name;
  }
  return build_summary(trace.accounting(), ctx);
}


}  // namespace

std::optional<nlohmann::json> rebuild_summary(const std::string& trace_path, const nlohmann::json& manifest,
                                              uint64_t* truncated_bytes, std::string& error) {
  TraceReplay trace;
  if (!trace.open(trace_path, error)) return std::nullopt;
  ManifestRecord record;
  from_json(manifest, record);
  auto summary = replay_summary(trace, record, error);
  if (truncated_bytes != nullptr) *truncated_bytes = trace.truncated_bytes();
  if (!summary) return std::nullopt;
  return to_json(*summary);
}

std::optional<RunDirectory> open_run_directory(const std::string& path, std::string& error, Progress* progress) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = path + " is not a directory";
    return std::nullopt;
  }
  RunDirectory run;
  run.path = path;
  bool missing = false;
  auto manifest = read_json_file(path + "/" + kManifestFile, error, missing);
  if (!manifest && !missing) return std::nullopt;
  if (manifest) run.has_manifest = from_json(*manifest, run.manifest);
  const std::string& trace_path = path;  // its segments (trace_reader.h)
  const bool has_trace = reader::has_trace(path);
  if (!manifest && !has_trace) {
    error = path + " is not a gpumemprof run directory (no manifest.json and no trace.gmpt)";
    return std::nullopt;
  }
  auto summary = read_json_file(path + "/" + kSummaryFile, error, missing);
  if (!summary && !missing) return std::nullopt;
  // Every file is checked, and the records counted, before anything is replayed.
  TraceReplay trace;
  if (has_trace && !trace.open(trace_path, error)) return std::nullopt;
  // A summary.json that is not an object says nothing: as if there were none.
  std::optional<Summary> read;
  if (summary && summary->is_object()) read = summary_from_json(*summary);
  run.events = event_counts(read ? &*read : nullptr, trace.records_in_file(), trace.files_text());
  if (read && read->devices_listed) {
    run.summary = std::move(*summary);
    run.figures = std::move(*read);
    return run;
  }
  run.rebuild_reason =
      summary ? "summary.json has no \"devices\" array" : "summary.json is missing (the process did not exit normally)";
  if (!has_trace) {
    error = path + ": " + run.rebuild_reason + " and there is no trace.gmpt to rebuild it from";
    return std::nullopt;
  }
  if (progress != nullptr) progress->expect(trace.records_in_file());
  trace.set_progress(progress);
  auto rebuilt = replay_summary(trace, run.manifest, error);
  if (!rebuilt) return std::nullopt;
  run.trace_truncated_bytes = trace.truncated_bytes();
  run.summary_rebuilt = true;
  // A trace cannot say what was lost or never written: unknown, not 0 (event_counts_json agrees).
  if (!run.events.final_flush) rebuilt->events.counts_known = false;
  run.summary = to_json(*rebuilt);
  run.figures = std::move(*rebuilt);
  return run;
}

}  // namespace gmp::reader
