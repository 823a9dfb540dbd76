// The job view of `report`, `html` and `export --format perfetto` (docs/report.md §Jobs): what those
// commands do when given a directory holding the run directories of a job's processes rather than
// one run directory. The commands parse their options and dispatch here; the figures come from
// analysis::analyze_job(). job_report.cpp writes the report (text and --json) and the table both
// outputs share, job_html.cpp the page, job_export.cpp the perfetto file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "job_analysis.h"
#include "run_analysis.h"

namespace gmp::tool {

// Whether `path` is read as a job: a directory that is not itself a run directory but holds some.
// Anything else goes to the single run's reading, whose errors say what a run directory is.
bool is_job_root(const std::string& path);

// --since or --until with a job's ROOT: says so in one line; returns the exit status, 2. A window is
// a span of one process's clock, and the processes of a job started at different times.
int window_refused(const char* command, const std::string& root);

// `gpumemprof report ROOT [--json]`; the exit status: 0, or 2 when no run directory under ROOT could
// be read (each one's error on stderr).
int report_job(const std::string& root, bool json);

// Opens `root` as a job for `command`; nullopt after saying why on stderr (exit status 2): not a job,
// or none of its run directories could be read.
std::optional<analysis::JobAnalysis> open_job(const char* command, const std::string& root);

// The table of the job view, one row per process and device, as text cells: the header, then the
// rows. Framework columns only when some row has them.
std::vector<std::vector<std::string>> job_table(const analysis::JobAnalysis& job);
// "allocated peak: highest rank 2 (device 0) 8.00 MiB, lowest rank 0 (device 0) 3.00 MiB, +5.00 MiB (+166.7%)"
std::string spread_line(const analysis::JobAnalysis& job, const analysis::Spread& s);
// "rank 2 ran out of memory first, at 40.1 ms: cuMemAlloc_v2 of 512.00 MiB on device 0"; the later
// ones "rank 3, 12.0 ms later". Empty when no process did.
std::vector<std::string> failed_first_lines(const analysis::JobAnalysis& job);

// `gpumemprof diff ROOT_A ROOT_B` (job_diff.cpp): B's processes against A's, rank by rank; the text
// or --json on stdout (with `limits`, the growth limit's verdict or null). Returns 0.
int diff_jobs(const analysis::JobAnalysis& a, const analysis::JobAnalysis& b, bool json, nlohmann::json limits);

// What the job's page shows of one process beyond the job view (html_command.cpp replays its trace):
// its devices' timelines, and its own page's file name beside the job's ("" when none was written).
struct JobMemberView {
  std::map<int, std::vector<analysis::TimelineBucket>> timelines;  // by device; times since its start
  uint64_t end_ns = 0;                                              // the timeline's end, the same clock
  std::string page;
  std::string error;  // why its trace could not be replayed ("" when it was)
};

// The page of `gpumemprof html ROOT` (job_html.cpp); `views` by member, as many as job.members.
std::string render_job_html(const analysis::JobAnalysis& job, const std::vector<JobMemberView>& views);

// `gpumemprof export ROOT --format perfetto [-o FILE] [--resolution D] [--min-size S]` (job_export.cpp):
// every process its own track group, aligned on the wall clock; the options as for one run, applied
// to each. Returns the exit status.
struct JobExportOptions {
  std::string output;                       // "" or "-": stdout
  std::optional<uint64_t> resolution_ns, min_size;
};
int export_job_perfetto(const analysis::JobAnalysis& job, const JobExportOptions& options);

}  // namespace gmp::tool
