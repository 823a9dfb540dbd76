// The gpumemprof command: post-mortem tools over run directories written by libgpumemprof.so.
#include <cstdio>
#include <cstring>

#include "report.h"
#include "run_command.h"

namespace {

constexpr const char* kUsage =
    "usage: gpumemprof COMMAND [ARGS]\n"
    "  run [options] -- CMD  profile CMD and the processes it starts; prints the next commands\n"
    "  report DIR [--json]   figures of one run directory\n"
    "  --version             print the version\n"
    "Each command has --help.\n";

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
  if (!std::strcmp(argv[1], "run")) return gmp::tool::run_main(argc - 2, argv + 2);
  std::fprintf(stderr, "gpumemprof: unknown command '%s'; accepted: run, report, --version, --help\n", argv[1]);
  return 2;
}
