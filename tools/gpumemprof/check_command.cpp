// `gpumemprof check DIR_OR_ROOT LIMITS...`: a CI gate over a run directory or a whole job
// (docs/check.md). The limits themselves are check_limits.h's, shared with `gpumemprof run`.
#include <cstdio>
#include <cstring>
#include <string>

#include "check_limits.h"
#include "commands.h"

namespace gmp::tool {
namespace {

constexpr const char* kUsage =
    "usage: gpumemprof check DIR_OR_ROOT [--max-peak SIZE] [--max-reserved SIZE] [--max-leak SIZE] [--no-oom]\n"
    "                        [--baseline DIR --max-growth PERCENT]\n"
    "  A CI gate: checks memory limits on a run directory, or on every run directory of a job root (one per\n"
    "  rank or process, as gpumemprof run -o ROOT leaves them). Peaks are the driver level's, per device\n"
    "  (summary.json's allocated_bytes.peak and reserved_bytes.peak); under PyTorch they hold its segments,\n"
    "  so they bound its tensor-level figures, which are not checked apart. Live at exit is summary.json's\n"
    "  live_at_exit, per process: tensors still allocated and driver allocations outside PyTorch's cache\n"
    "  (the report's leaks). A process killed before writing summary.json is checked on the figures rebuilt\n"
    "  from its trace, with a note. Baseline processes are matched by rank when both record ranks, else by\n"
    "  position. docs/check.md says more.\n"
    "options:\n"
    "%s"
    "Exit status: 0 every limit holds (one line: each limit, the highest figure and where it was); 1 a limit\n"
    "broke (one line each: the rank or pid, the device, the figure, the limit); 2 bad usage or unreadable input.\n";

}  // namespace

int check_main(int argc, char** argv) {
  Limits limits;
  std::string dir;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf(kUsage, kLimitOptionsHelp);
      return 0;
    }
  }
  for (int i = 0; i < argc; ++i) {
    const LimitArg taken = take_limit_arg("check", argc, argv, i, limits);
    if (taken == LimitArg::Refused) return 2;
    if (taken == LimitArg::Taken) continue;
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "gpumemprof check: unknown option '%s'; accepted: %s, --help\n", argv[i], kLimitOptionNames);
      return 2;
    }
    if (!dir.empty()) {
      std::fprintf(stderr, "gpumemprof check: one run directory or job root expected, got '%s' too\n", argv[i]);
      return 2;
    }
    dir = argv[i];
  }
  if (dir.empty()) {
    std::fprintf(stderr,
                 "gpumemprof check: no run directory or job root given; usage: gpumemprof check DIR_OR_ROOT "
                 "LIMITS... (--help says more)\n");
    return 2;
  }
  if (!limits.any() && limits.baseline_path.empty()) {
    std::fprintf(stderr,
                 "gpumemprof check: nothing to check; give at least one of --max-peak, --max-reserved, "
                 "--max-leak, --no-oom, or --baseline DIR --max-growth PERCENT\n");
    return 2;
  }
  if (auto status = prepare_limits("check", limits)) return *status;
  return check_limits("check", dir, limits, stdout);
}

}  // namespace gmp::tool
