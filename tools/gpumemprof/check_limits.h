// A CI gate's memory limits on the command line (docs/check.md): parsed, and checked against a run
// directory or a job root, once for `gpumemprof check` and `gpumemprof run`, so that both accept the
// same options and print the same lines. The verdict itself is analysis/limits_verdict.h's.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "job_directory.h"
#include "limits_verdict.h"

namespace gmp::tool {

enum class LimitArg {
  Other,    // argv[i] is not a limit option
  Taken,    // it was, and is in `limits` (i is past its value)
  Refused,  // it was, with a missing or bad value: one line printed on stderr
};
// argv[i] as "--name value" or "--name=value" of a limit option.
LimitArg take_limit_arg(const char* command, int argc, char** argv, int& i, analysis::Limits& limits);

// The growth limit's value at argv[i] (a percentage: 10, 2.5%) into limits.max_growth; false
// after one line on stderr naming limits.growth_option when it is missing or bad.
bool take_growth_arg(const char* command, int argc, char** argv, int& i, analysis::Limits& limits);

// After the options: --baseline and --max-growth need each other, and the baseline is read now, so
// that a bad one is refused before anything else is read or run. One line on stderr and 2 when not.
std::optional<int> prepare_limits(const char* command, analysis::Limits& limits);

// Opens `dir_or_root` (one run directory, or a job root as reader::open_job_directory finds it) and
// checks `limits` on every run directory. Prints the verdict on `out`, each line starting
// "gpumemprof COMMAND: ", and returns 1 when a limit broke, else 0. Unreadable input: one line per
// unreadable directory, one whose summary.json holds a figure that is not a count
// (analysis/check_figures.h), or the baseline's mismatch, on stderr; returns 2.
int check_limits(const char* command, const std::string& dir_or_root, const analysis::Limits& limits, FILE* out);
// The same on runs already found (`gpumemprof run`'s own processes); `where` names them.
int check_limits(const char* command, const std::string& where, const std::vector<reader::JobMember>& members,
                 const analysis::Limits& limits, FILE* out);

}  // namespace gmp::tool
