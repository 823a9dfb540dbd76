// The gpumemprof command: a launcher and post-mortem tools over run directories written by
// libgpumemprof.so.
#include <cstdio>
#include <cstring>

#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*main)(int, char**);
};
constexpr Command kCommands[] = {
    {"run", gmp::tool::run_main},       {"report", gmp::tool::report_main}, {"oom", gmp::tool::oom_main},
    {"export", gmp::tool::export_main}, {"diff", gmp::tool::diff_main},     {"html", gmp::tool::html_main},
};

constexpr const char* kUsage =
    "usage: gpumemprof COMMAND [ARGS]\n"
    "  run [options] -- CMD ARGS...          profile CMD and the processes it starts; prints the next commands\n"
    "  report DIR [--json]                   peaks, what was live at the peak, leaks, OOMs, alerts\n"
    "  oom BUNDLE_OR_DIR [--json]            explain an out-of-memory failure in plain words\n"
    "  export DIR --format F [-o FILE]       csv, jsonl, perfetto or telemetry-v2\n"
    "  diff DIR_A DIR_B [--json]             what changed between two runs\n"
    "  html DIR -o FILE                      a self-contained HTML report\n"
    "  --version                             print the version\n"
    "Each command has --help. Exit status 2 means bad usage or unreadable input.\n";

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
  for (const Command& c : kCommands) {
    if (!std::strcmp(argv[1], c.name)) return c.main(argc - 2, argv + 2);
  }
  std::fprintf(stderr, "gpumemprof: unknown command '%s'; accepted: run, report, oom, export, diff, html, --version, --help\n",
               argv[1]);
  return 2;
}
