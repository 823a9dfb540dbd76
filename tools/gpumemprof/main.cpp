// The gpumemprof command: a launcher and post-mortem tools over run directories written by
// libgpumemprof.so.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "command_options.h"
#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*main)(int, char**);
};
constexpr Command kCommands[] = {
    {"run", gmp::tool::run_main},       {"report", gmp::tool::report_main}, {"oom", gmp::tool::oom_main},
    {"export", gmp::tool::export_main}, {"diff", gmp::tool::diff_main},     {"html", gmp::tool::html_main},
    {"check", gmp::tool::check_main},
};

// "gpumemprof report: " or, outside a command, "gpumemprof: ".
std::string prefix(const char* command) {
  return command == nullptr ? "gpumemprof: " : std::string("gpumemprof ") + command + ": ";
}

// Why a write to stdout failed. stdio keeps only an error flag, and a large fwrite() that fails
// leaves nothing for the final fflush() to fail on, so stdout's writes go through this.
int g_stdout_errno = 0;

ssize_t write_stdout(void*, const char* buf, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(STDOUT_FILENO, buf + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      g_stdout_errno = n < 0 ? errno : EIO;
      return done > 0 ? static_cast<ssize_t>(done) : -1;
    }
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(size);
}

// glibc documents stdout as an ordinary variable that may be set.
void route_stdout() {
  if (FILE* f = fopencookie(nullptr, "w", cookie_io_functions_t{nullptr, write_stdout, nullptr, nullptr})) {
    std::fflush(stdout);
    if (isatty(STDOUT_FILENO)) setvbuf(f, nullptr, _IOLBF, 0);  // as stdio does for a terminal
    stdout = f;
  }
}

// Every command ends here, so that stdout is checked once for all of them: output that could not
// be written (a full disk, /dev/full) is a failure with one line, not a silent success. A command
// that already failed has said why in its own line.
int finish(const char* command, int status) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
  if (status != 0) return status;
  std::fprintf(stderr, "%scannot write to stdout: %s\n", prefix(command).c_str(),
               std::strerror(g_stdout_errno != 0 ? g_stdout_errno : EIO));
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
               "gpumemprof: unknown command '%s'; accepted: run, report, oom, export, diff, html, check, --version, "
               "--help\n",
               argv[1]);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  route_stdout();
  return dispatch(argc, argv);
}
