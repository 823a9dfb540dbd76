// `gpumemprof check DIR_OR_ROOT LIMITS...`: a CI gate over a run directory or a whole job
// (docs/check.md). The limits themselves are check_limits.h's, shared with `gpumemprof run`.
#include <cstdio>
#include <cstring>
#include <string>

#include "check_limits.h"
#include "command_options.h"
#include "commands.h"

namespace gmp::tool {

int check_main(int argc, char** argv) {
  analysis::Limits limits;
  std::string dir;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(help_text(kCheckOptions).c_str(), stdout);
      return 0;
    }
  }
  for (int i = 0; i < argc; ++i) {
    // Every option of the table is a limit.
    if (find_option(kCheckOptions, argv[i]) != nullptr) {
      if (take_limit_arg("check", argc, argv, i, limits) == LimitArg::Refused) return 2;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "gpumemprof check: unknown option '%s'; accepted: %s\n", argv[i],
                   accepted_options(kCheckOptions).c_str());
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
                 "--max-leak, --max-graph-memory, --max-category, --no-oom, or --baseline DIR --max-growth PERCENT\n");
    return 2;
  }
  if (auto status = prepare_limits("check", limits)) return *status;
  return check_limits("check", dir, limits, stdout);
}

}  // namespace gmp::tool
