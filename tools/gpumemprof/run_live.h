// `gpumemprof run --live` (docs/live.md, "gpumemprof run --live"): the view of `gpumemprof top`
// over the run directories the command's processes write under ROOT, while it runs.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <set>
#include <string>

namespace gmp::tool {

struct WatchedCommand {
  std::string name;   // as the status line names it: "train.py"
  pid_t pid = 0;
  std::string root;   // where its processes' run directories go
  std::set<std::string> earlier;  // run directories ROOT held before: not this run's
  std::string output;  // the file its stdout and stderr go to
  // How it ended ("exited 0"), reaping it, once it has; nullopt while it runs.
  std::function<std::optional<std::string>()> ended;
};

// Shows the view until `q` (the command runs on if it has not ended: the caller waits for it).
// Where the terminal cannot be driven, says so in one line and returns at once.
void watch_command(const WatchedCommand& command);

}  // namespace gmp::tool
