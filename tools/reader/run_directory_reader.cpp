#include "run_directory_reader.h"

#include <sys/stat.h>

#include <fstream>

#include "accounting.h"
#include "summary.h"
#include "trace_reader.h"

namespace gmp::reader {
namespace {

nlohmann::json read_json(const std::string& path, std::string& problem) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    problem = path + " is not valid JSON (" + e.what() + ")";
    return nullptr;
  }
}

}  // namespace

std::optional<nlohmann::json> rebuild_summary(const std::string& trace_path, const nlohmann::json& manifest,
                                              uint64_t* truncated_bytes, std::string& error) {
  TraceReader trace;
  if (!trace.open(trace_path)) {
    error = trace.error();
    return std::nullopt;
  }
  Accounting acc;
  Event e;
  while (trace.next(e)) acc.apply(e);
  if (truncated_bytes != nullptr) *truncated_bytes = trace.truncated_bytes();
  SummaryContext ctx;
  ctx.clean_exit = false;
  ctx.start_monotonic_ns = trace.header().start_monotonic_ns;
  if (manifest.is_object() && manifest.contains("devices") && manifest["devices"].is_array()) {
    for (const auto& d : manifest["devices"]) {
      if (d.contains("ordinal") && d["ordinal"].is_number_integer() && d.contains("name") && d["name"].is_string()) {
        ctx.device_names[d["ordinal"].get<int>()] = d["name"].get<std::string>();
      }
    }
  }
  return build_summary(acc, ctx);
}

std::optional<RunDirectory> open_run_directory(const std::string& path, std::string& error) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = path + " is not a directory";
    return std::nullopt;
  }
  RunDirectory run;
  run.path = path;
  std::string problem;
  run.manifest = read_json(path + "/manifest.json", problem);
  const std::string trace_path = path + "/trace.gmpt";
  const bool has_trace = stat(trace_path.c_str(), &st) == 0;
  if (run.manifest.is_null() && !has_trace) {
    error = path + " is not a gpumemprof run directory (no manifest.json and no trace.gmpt)" +
            (problem.empty() ? "" : "; " + problem);
    return std::nullopt;
  }
  run.summary = read_json(path + "/summary.json", problem);
  if (run.summary.is_object() && run.summary.contains("devices")) return run;
  run.rebuild_reason = run.summary.is_null() && problem.empty() ? "summary.json is missing (the process did not exit normally)"
                                                                 : "summary.json is unreadable";
  if (!has_trace) {
    error = path + ": " + run.rebuild_reason + " and there is no trace.gmpt to rebuild it from";
    return std::nullopt;
  }
  auto rebuilt = rebuild_summary(trace_path, run.manifest, &run.trace_truncated_bytes, error);
  if (!rebuilt) return std::nullopt;
  run.summary = std::move(*rebuilt);
  run.summary_rebuilt = true;
  return run;
}

}  // namespace gmp::reader
