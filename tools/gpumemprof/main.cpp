// The gpumemprof command: a launcher and post-mortem tools over run directories written by
// libgpumemprof.so.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "command_options.h"
#include "commands.h"
#include "output_streams.h"

namespace {

struct Command {
  const char* name;
  int (*main)(int, char**);
};
constexpr Command kCommands[] = {
    {"run", gmp::tool::run_main},       {"report", gmp::tool::report_main}, {"oom", gmp::tool::oom_main},
    {"export", gmp::tool::export_main}, {"diff", gmp::tool::diff_main},     {"html", gmp::tool::html_main},
    {"check", gmp::tool::check_main},   {"top", gmp::tool::top_main},
};

// "gpumemprof report: " or, outside a command, "gpumemprof: ".
std::string prefix(const char* command) {
  return command == nullptr ? "gpumemprof: " : std::string("gpumemprof ") + command + ": ";
}

// Every command ends here, so that stdout is checked once for all of them: output that could not
// be written (a full disk, /dev/full) is a failure with one line, not a silent success. A command
// that already failed has said why in its own line.
int finish(const char* command, int status) {
  const int error = gmp::tool::finish_output_streams();
  if (error == 0 || status != 0) return status;
  std::fprintf(stderr, "%scannot write to stdout: %s\n", prefix(command).c_str(), std::strerror(error));
  std::fflush(stderr);
  return 2;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(
        "gpumemprof: no command given; usage: gpumemprof COMMAND [ARGS] (gpumemprof --help lists the commands)\n",
        stderr);
    return 2;
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(gmp::tool::top_level_help().c_str(), stdout);
    return finish(nullptr, 0);
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "-V")) {
    std::printf("gpumemprof %s\n", GPUMEMPROF_VERSION);
    return finish(nullptr, 0);
  }
  // `gpumemprof help [COMMAND]`, as git and cargo take it: the same text as --help.
  if (!std::strcmp(argv[1], "help")) {
    if (argc == 2) {
      std::fputs(gmp::tool::top_level_help().c_str(), stdout);
      return finish(nullptr, 0);
    }
    for (const Command& c : kCommands) {
      if (argc != 3 || std::strcmp(argv[2], c.name) != 0) continue;
      char help_flag[] = "--help";
      char* args[] = {help_flag, nullptr};
      return finish(c.name, c.main(1, args));
    }
    std::fprintf(stderr, "gpumemprof help: %s; accepted: gpumemprof help [run|report|oom|export|diff|html|check|top]\n",
                 argc == 3 ? ("unknown command '" + std::string(argv[2]) + "'").c_str() : "one command at most");
    return 2;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return finish(c.name, c.main(argc - 2, argv + 2));
    } catch (const std::exception& e) {
      // Not expected: readers do not throw on any input. One line rather than an abort.
      std::fprintf(stderr, "%scannot continue: %s\n", prefix(c.name).c_str(), e.what());
      return 2;
    }
  }
  std::fprintf(stderr,
               "gpumemprof: unknown command '%s'; accepted: run, report, oom, export, diff, html, check, top, help, "
               "--version, --help\n",
               argv[1]);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  gmp::tool::route_output_streams();
  return dispatch(argc, argv);
}
