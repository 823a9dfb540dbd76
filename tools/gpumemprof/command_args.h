// The arguments of the commands that take paths and --json only (report, diff, oom): one parser,
// so they accept and refuse the same things with the same messages.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gmp::tool {

struct PathArgs {
  std::vector<std::string> paths;  // in order; a lone "-" is a path too
  bool json = false;
};

// Parses `argv`. --help or -h prints `usage` on stdout: returns 0. An unknown option prints
// "gpumemprof COMMAND: unknown option 'X'; accepted: --json, --help" on stderr: returns 2.
// Otherwise fills `out` and returns nothing; how many paths are right is the command's to say.
std::optional<int> parse_path_args(const char* command, const char* usage, int argc, char** argv, PathArgs& out);

}  // namespace gmp::tool
