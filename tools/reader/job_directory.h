// A job as the tools see it: a directory holding the run directories of several processes, as
// `gpumemprof run -o ROOT` leaves them (one per rank of a torchrun, mpirun or srun job, or one per
// process of anything else). Read by the job view (report, html, export of a ROOT) and `check`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run_directory_reader.h"

namespace gmp::reader {

// One run directory of a job: opened, or the one line saying why it could not be.
struct JobMember {
  std::string path;
  std::optional<RunDirectory> run;
  std::string error;  // when `run` is nullopt
};

// True when `path` holds a manifest.json or a trace: what open_run_directory() takes for a run.
bool looks_like_run_directory(const std::string& path);

// The run directories under `root`, searched down to kJobSearchDepth levels without descending into
// a run directory (so a run's oom/ is never taken for a run), each opened, in the order of rank
// (processes without one after those with one), then host, then pid, then path. What the search
// cannot examine (a directory it may not read or enter, a symlink loop) is a member that could not
// be read, never skipped: one unreadable rank makes a gate's input unreadable (docs/check.md).
// nullopt with `error` (one line) when `root` is not a readable directory or holds no run directory.
//
// With `left_out`, only one job's members are kept (choose_job() below), and `left_out` says what
// else `root` holds ("" when nothing); then `error` may list the jobs found, a line each.
inline constexpr int kJobSearchDepth = 3;
std::optional<std::vector<JobMember>> open_job_directory(const std::string& root, std::string& error,
                                                         std::string* left_out = nullptr);

// Which runs under a root belong together: those one `gpumemprof run` started (the manifest's
// `invocation`), else those of one scheduler or launcher job (`job_id`), else those with neither in
// one directory. When the root holds one such job, all of `members`. When it holds several side by
// side (a ROOT that `gpumemprof run -o ROOT` was given again and again), the latest (by its first
// process's start), and `left_out` counts the others; a member that could not be read goes with
// the latest when its directory changed since that job started. When the jobs lie in different
// directories (a search of /tmp), nullopt with `error` listing them, a line each: which to read is
// the user's choice.
std::optional<std::vector<JobMember>> choose_job(const std::string& root, std::vector<JobMember> members,
                                                 std::string& left_out, std::string& error);
// The members open_job_directory() would open, unopened (`error` set for those it could not
// examine) and in name order; none when `root` is not a directory: whether a directory holds a job.
std::vector<JobMember> find_run_directories(const std::string& root);
// The rank a run directory's name gives (`rank3.train.py.4242`, docs/run-directory.md#naming): how
// a directory whose manifest could not be read is named and ordered.
std::optional<uint64_t> rank_in_name(const std::string& path);

}  // namespace gmp::reader
