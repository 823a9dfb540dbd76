// `gpumemprof export ROOT --format perfetto` of a job (docs/exports.md §Jobs): one Chrome
// trace-event file in which every process of the job is a track group of its own (a "process" in
// Perfetto's terms), in the job's order (rank, host, pid), each with the tracks a single run's export
// has. Times are microseconds since the job started (its first process's start), so that the ranks
// line up on the wall clock: a process's events are shifted by how much later it started.
#include <algorithm>
#include <cstdio>
#include <set>

#include "count_text.h"
#include "export_formats.h"
#include "human_text.h"
#include "job_view.h"
#include "trace_reader.h"

namespace gmp::tool {
namespace {

using namespace exporter;

// The track groups' ids: the processes' own pids where they are distinct across the job (the usual
// case on one host), else (the same pid on two hosts) each process's 1-based place in the job.
std::vector<uint64_t> track_group_ids(const analysis::JobAnalysis& job, const std::vector<size_t>& exported) {
  std::vector<uint64_t> ids;
  std::set<uint64_t> seen;
  for (size_t i : exported) {
    ids.push_back(job.members[i].run->manifest.pid.value_or(0));
    if (ids.back() == 0 || !seen.insert(ids.back()).second) {
      for (size_t k = 0; k < exported.size(); ++k) ids[k] = k + 1;
      ids.resize(exported.size());
      return ids;
    }
  }
  return ids;
}

// The track group's name: "rank 1 (node7 pid 4242)", or the executable's name for a process
// without a rank ("train (node7 pid 4242)").
std::string process_label(const reader::JobMember& m) {
  const ManifestRecord& man = m.run->manifest;
  std::string label = man.rank ? "rank " + std::to_string(*man.rank) : man.exe.substr(man.exe.rfind('/') + 1);
  if (label.empty()) label = "?";
  label += " (";
  if (!man.host.empty()) label += man.host + " ";
  return label + "pid " + (man.pid ? std::to_string(*man.pid) : std::string("?")) + ")";
}

void write_header(std::string& b, const analysis::JobAnalysis& job, const std::vector<size_t>& exported,
                  const std::vector<uint64_t>& ids) {
  b += "{\"displayTimeUnit\":\"ms\",\"otherData\":";
  JsonObject other(b);
  other.str("tool", "gpumemprof").str("job_root", job.root).u64("start_realtime_ns", job.start_realtime_ns);
  other.key("processes");
  b += '[';
  for (size_t k = 0; k < exported.size(); ++k) {
    const reader::JobMember& m = job.members[exported[k]];
    const ManifestRecord& man = m.run->manifest;
    if (k > 0) b += ',';
    JsonObject p(b);
    p.u64("pid", ids[k]).str("run_directory", m.path).str("host", man.host);
    if (man.rank) p.u64("rank", *man.rank);
    else p.null("rank");
    p.u64("process_id", man.pid.value_or(0)).u64("offset_ns", job.job_time(exported[k], 0));
    p.close();
  }
  b += ']';
  other.close();
  b += ",\"traceEvents\":[";
}

int failed(const std::string& what) {
  std::fprintf(stderr, "gpumemprof export: %s\n", what.c_str());
  return 2;
}

}  // namespace

int export_job_perfetto(const analysis::JobAnalysis& job, const JobExportOptions& options) {
  std::vector<size_t> exported;
  std::vector<std::string> notes;
  for (size_t i = 0; i < job.members.size(); ++i) {
    const reader::JobMember& m = job.members[i];
    if (!m.run) notes.push_back("left out " + m.path + ": " + m.error);
    else if (!reader::has_trace(m.path)) notes.push_back("left out " + m.path + ": it has no trace.gmpt");
    else exported.push_back(i);
  }
  if (exported.empty()) return failed("no run directory under " + job.root + " has a trace to export");
  const std::vector<uint64_t> ids = track_group_ids(job, exported);

  std::string error;
  reader::Progress progress("gpumemprof export");
  Output out;
  if (!out.open(options.output, error)) return failed(error);
  write_header(out.buffer(), job, exported, ids);
  bool first = true;
  uint64_t events = 0;
  for (size_t k = 0; k < exported.size(); ++k) {
    const reader::JobMember& m = job.members[exported[k]];
    Replay replay;
    if (!replay.open(m.path, reader::Window{}, &progress, error)) {
      out.abandon();
      return failed(error);
    }
    progress.expect(replay.records_in_file());
    Context ctx{*m.run, replay, out};
    ctx.progress = &progress;
    ctx.min_size = options.min_size;
    set_resolution(ctx, options.resolution_ns);
    write_perfetto_process(ctx, {ids[k], process_label(m), job.job_time(exported[k], 0), k}, first);
    if (replay.failed() || !ctx.error.empty()) {
      out.abandon();
      return failed(replay.failed() ? replay.error() : ctx.error);
    }
    events += replay.events_read();
    const std::string label = analysis::member_label(m);
    if (replay.truncated_bytes() > 0) {
      notes.push_back(label + ": " + replay.trace_path() + " ends in a partial " +
                      std::to_string(replay.truncated_bytes()) + "-byte record; exported the whole events before it");
    }
    for (const std::string& n : ctx.notes) notes.push_back(label + ": " + n);
  }
  out.buffer() += "\n]}\n";
  if (!out.finish(error)) {
    std::fprintf(stderr, "gpumemprof export: %s\n", error.c_str());
    return 1;
  }
  for (const std::string& n : notes) std::fprintf(stderr, "gpumemprof export: note: %s\n", n.c_str());
  if (out.name() != "stdout") {
    std::fprintf(stderr, "gpumemprof export: wrote %s (perfetto, %s, %llu trace events)\n", out.name().c_str(),
                 counted(exported.size(), "process").c_str(), static_cast<unsigned long long>(events));
  }
  return 0;
}

}  // namespace gmp::tool
