#include "command_args.h"

#include <cstdio>
#include <cstring>

namespace gmp::tool {

std::optional<int> parse_path_args(const char* command, const char* usage, int argc, char** argv, PathArgs& out) {
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (!std::strcmp(argv[i], "--json")) {
      out.json = true;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "gpumemprof %s: unknown option '%s'; accepted: --json, --help\n", command, argv[i]);
      return 2;
    } else {
      out.paths.push_back(argv[i]);
    }
  }
  return std::nullopt;
}

}  // namespace gmp::tool
