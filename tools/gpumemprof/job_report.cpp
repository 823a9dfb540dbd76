// `gpumemprof report ROOT [--json]` on a job (docs/report.md §Jobs), and the pieces of text the
// job's HTML page shares with it.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "bytes_text.h"
#include "count_text.h"
#include "human_text.h"
#include "job_view.h"
#include "json_text.h"
#include "output_streams.h"

namespace gmp::tool {
namespace {

using analysis::JobAnalysis;
using analysis::JobRow;
using ull = unsigned long long;

std::string percent_text(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

// What the member's row says of the job it belongs to: the first opened member that names each.
struct JobFacts {
  std::string job_id, launcher;
  std::optional<uint64_t> world_size;
  std::string started;  // the earliest manifest's start_time_utc
};

JobFacts job_facts(const JobAnalysis& job) {
  JobFacts f;
  for (const reader::JobMember& m : job.members) {
    if (!m.run) continue;
    const ManifestRecord& man = m.run->manifest;
    if (f.job_id.empty()) f.job_id = man.job_id;
    if (f.launcher.empty()) f.launcher = man.launcher;
    if (!f.world_size) f.world_size = man.world_size;
    if (man.start_realtime_ns != 0 && man.start_realtime_ns == job.start_realtime_ns) f.started = man.start_time_utc;
  }
  return f;
}

void print_text(const JobAnalysis& job) {
  const JobFacts facts = job_facts(job);
  std::string what = counted(job.members.size(), "process");
  if (!facts.job_id.empty()) what = "job " + facts.job_id + ", " + what;
  // "env": RANK without torchrun's own variables, a script or another launcher (launcher_env.h).
  if (!facts.launcher.empty()) what += facts.launcher == "env" ? " ranked by RANK" : " started by " + facts.launcher;
  if (facts.world_size) what += ", world size " + std::to_string(*facts.world_size);
  say("gpumemprof report: " + job.root + " (" + what + ")", "", "  ");
  if (!job.left_out.empty()) say(job.left_out, "  ", "    ");
  if (!facts.started.empty()) {
    say("the job started " + facts.started + " (its first process's start); times are since then", "  ", "    ");
  }
  // The header on two lines ("allocated" over "peak"): the figures are narrower than their names,
  // and the table then fits 80 columns.
  std::vector<std::vector<std::string>> table = job_table(job);
  const auto header = two_row_header(table.front());
  table.erase(table.begin());
  table.insert(table.begin(), header.begin(), header.end());
  print_table(std::move(table), {.indent = 2, .gap = 2, .header_rows = 2});
  for (size_t i = 0; i < job.members.size(); ++i) {
    const reader::JobMember& m = job.members[i];
    if (!m.run) continue;
    const std::string label = analysis::member_label(m);
    if (m.run->summary_rebuilt) {
      say("note: " + label + ": " + m.run->rebuild_reason + "; figures rebuilt from the trace", "  ", "    ");
    }
    for (const std::string& w : reader::event_count_warnings(m.run->events)) {
      say("note: " + label + ": " + w, "  ", "    ");
    }
  }
  if (!job.spreads.empty()) {
    std::printf("spread across the job:\n");
    for (const analysis::Spread& s : job.spreads) say(spread_line(job, s), "  ", "    ");
  }
  const std::vector<std::string> failed = failed_first_lines(job);
  if (failed.empty()) {
    uint64_t failures = 0;
    for (const reader::JobMember& m : job.members) failures += m.run ? m.run->figures.oom.failures : 0;
    if (failures == 0) std::printf("out of memory: no process ran out\n");
    else std::printf("out of memory: %s, none at a known time\n", counted(failures, "failure").c_str());
  }
  for (size_t i = 0; i < failed.size(); ++i) say(failed[i], i == 0 ? "" : "  ", i == 0 ? "  " : "    ");
  std::printf("each process's own report:\n");
  for (const reader::JobMember& m : job.members) {
    if (m.run) std::printf("  %-10s gpumemprof report %s\n", analysis::member_label(m).c_str(), m.path.c_str());
  }
  if (job.opened < job.members.size()) {
    std::printf("not read (%llu):\n", (ull)(job.members.size() - job.opened));
    for (const reader::JobMember& m : job.members) {
      if (!m.run) std::printf("  %s: %s\n", analysis::member_label(m).c_str(), m.error.c_str());
    }
  }
}

}  // namespace

bool is_job_root(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !reader::looks_like_run_directory(path) &&
         !reader::find_run_directories(path).empty();
}

int window_refused(const char* command, const std::string& root) {
  std::fprintf(stderr,
               "gpumemprof %s: --since and --until apply to one run directory, and %s holds a job; give one of its "
               "run directories (gpumemprof report %s lists them)\n",
               command, root.c_str(), root.c_str());
  return 2;
}

std::optional<analysis::JobAnalysis> open_job(const char* command, const std::string& root) {
  std::string error;
  auto job = analysis::analyze_job(root, error);
  if (!job) {
    std::fprintf(stderr, "gpumemprof %s: %s\n", command, error.c_str());
    return std::nullopt;
  }
  if (job->opened == 0) {
    std::fprintf(stderr, "gpumemprof %s: none of the %zu run directories under %s could be read:\n", command,
                 job->members.size(), root.c_str());
    for (const reader::JobMember& m : job->members) std::fprintf(stderr, "  %s\n", m.error.c_str());
    return std::nullopt;
  }
  // What else ROOT holds: the report says it in its own output; the other commands on stderr.
  if (!job->left_out.empty() && std::strcmp(command, "report") != 0) {
    say("gpumemprof " + std::string(command) + ": " + job->left_out, "", "  ", stderr);
  }
  return job;
}

std::vector<std::vector<std::string>> job_table(const JobAnalysis& job) {
  const bool framework = std::any_of(job.rows.begin(), job.rows.end(), [](const JobRow& r) { return r.framework; });
  std::vector<std::vector<std::string>> table;
  table.push_back({"rank", "host", "pid", "device", "allocated peak", "at", "reserved peak", "at"});
  if (framework) table.back().insert(table.back().end(), {"tensors peak", "at", "fw reserved peak", "at"});
  table.back().insert(table.back().end(), {"OOMs", "alerts", "lost events"});
  for (const JobRow& r : job.rows) {
    const reader::RunDirectory& run = *job.members[r.member].run;
    const ManifestRecord& m = run.manifest;
    const Summary& s = run.figures;
    auto at = [&](uint64_t ns) { return human_duration_ns(job.job_time(r.member, ns)); };
    std::vector<std::string> row = {m.rank ? std::to_string(*m.rank) : "-", m.host.empty() ? "?" : m.host,
                                    m.pid ? std::to_string(*m.pid) : "?"};
    if (r.device < 0) {
      row.insert(row.end(), {"none", "-", "", "-", ""});
    } else {
      row.insert(row.end(), {std::to_string(r.device), bytes_text(r.allocated_peak), at(r.allocated_peak_ns),
                             bytes_text(r.reserved_peak), at(r.reserved_peak_ns)});
    }
    if (framework && r.framework) {
      row.insert(row.end(), {bytes_text(r.tensors_peak), at(r.tensors_peak_ns), bytes_text(r.framework_reserved_peak),
                             at(r.framework_reserved_peak_ns)});
    } else if (framework) {
      row.insert(row.end(), {"-", "", "-", ""});
    }
    const reader::EventCounts& events = run.events;
    row.insert(row.end(), {std::to_string(s.oom.failures), std::to_string(s.alerts.fired()),
                           events.final_flush ? std::to_string(events.lost) : "unknown"});
    table.push_back(std::move(row));
  }
  return table;
}

std::string spread_line(const JobAnalysis& job, const analysis::Spread& s) {
  const JobRow& hi = job.rows[s.highest];
  const JobRow& lo = job.rows[s.lowest];
  const uint64_t max = analysis::spread_value(hi, s.figure), min = analysis::spread_value(lo, s.figure);
  auto who = [&](const JobRow& r) {
    return analysis::member_label(job.members[r.member]) + " (device " + std::to_string(r.device) + ")";
  };
  std::string line = std::string(analysis::kSpreadFigures[static_cast<size_t>(s.figure)].label) + ": highest " +
                     who(hi) + " " + bytes_text(max) + ", lowest " + who(lo) + " " + bytes_text(min) + ", +" +
                     bytes_text(max - min);
  if (min > 0) line += " (+" + percent_text(max - min, min) + ")";
  return line;
}

std::vector<std::string> failed_first_lines(const JobAnalysis& job) {
  std::vector<std::string> lines;
  if (job.ooms.empty()) return lines;
  const analysis::JobOom& first = job.ooms.front();
  const SummaryFailure& f = first.failure;
  lines.push_back(analysis::member_label(job.members[first.member]) + " ran out of memory first, at " +
                  human_duration_ns(job.job_time(first.member, f.at_ns)) + ": " + f.api + " of " + bytes_text(f.size) +
                  " on device " + std::to_string(f.device));
  for (size_t i = 1; i < job.ooms.size(); ++i) {
    const analysis::JobOom& o = job.ooms[i];
    lines.push_back("then " + analysis::member_label(job.members[o.member]) + ", " +
                    human_duration_ns(o.wall_ns - first.wall_ns) + " later");
  }
  return lines;
}

int report_job(const std::string& root, bool json) {
  auto job = open_job("report", root);
  if (!job) return 2;
  if (json) {
    stdout_carries_data();
    std::printf("%s\n", json_text(analysis::job_json(*job), 2).c_str());
  } else {
    print_text(*job);
  }
  return 0;
}

}  // namespace gmp::tool
