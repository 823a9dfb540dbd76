// The gpumemprof command: post-mortem tools over run directories written by libgpumemprof.so.
#include <cstdio>
#include <cstring>

#include "report.h"

namespace {

constexpr const char* kUsage =
    "usage: gpumemprof COMMAND [ARGS]\n"
    "  report DIR [--json]   figures of one run directory\n"
    "  --version             print the version\n"
    "Profile a program with: LD_PRELOAD=/path/to/libgpumemprof.so PROGRAM [ARGS]\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("gpumemprof %s\n", GPUMEMPROF_VERSION);
    return 0;
  }
  if (!std::strcmp(argv[1], "report")) return gmp::tool::report_main(argc - 2, argv + 2);
  std::fprintf(stderr, "gpumemprof: unknown command '%s'; accepted: report, --version, --help\n", argv[1]);
  return 2;
}
