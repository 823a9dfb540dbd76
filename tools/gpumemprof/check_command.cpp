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
    "  Checks memory limits on a run directory, or on every run directory of a job root (one per rank or\n"
    "  process, as gpumemprof run -o ROOT leaves them). Peaks are the driver level's, per device (the report's\n"
    "  \"allocated peak\" and \"reserved peak\"); a leak is what the report lists as leaks (tensors still allocated\n"
    "  and driver allocations outside PyTorch's cache), per process. A process killed before summary.json is\n"
    "  checked on the figures rebuilt from its trace, and a note says so. Baseline processes are matched by\n"
    "  rank, else by position (docs/check.md).\n"
    "options:\n"
    "%s"
    "Exit status: 0 every limit holds (one line says what was checked); 1 a limit broke (one line each,\n"
    "naming the rank or pid, the device, the figure and the limit); 2 bad usage or unreadable input.\n";

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
      std::fprintf(stderr, "gpumemprof check: unknown option '%s'; accepted: %s, --help\n", argv[i],
                   kLimitOptionNames);
      return 2;
    }
    if (!dir.empty()) {
      std::fprintf(stderr, "gpumemprof check: one run directory or job root expected, got '%s' too\n", argv[i]);
      return 2;
    }
    dir = argv[i];
  }
  if (dir.empty()) {
    std::fprintf(stderr, "gpumemprof check: no run directory or job root given; usage: gpumemprof check DIR_OR_ROOT "
                 "LIMITS... (--help says more)\n");
    return 2;
  }
  if (!limits.any() && limits.baseline_path.empty()) {
    std::fprintf(stderr, "gpumemprof check: nothing to check; give at least one of --max-peak, --max-reserved, "
                 "--max-leak, --no-oom, or --baseline DIR --max-growth PERCENT\n");
    return 2;
  }
  if (auto status = prepare_limits("check", limits)) return *status;
  return check_limits("check", dir, limits, stdout);
}

}  // namespace gmp::tool
