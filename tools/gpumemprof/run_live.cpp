#include "run_live.h"

#include <cstdio>

#include "live_reader.h"
#include "top_screen.h"

namespace gmp::tool {

void watch_command(const WatchedCommand& command) {
  reader::LiveSources sources;
  sources.root = command.root;
  sources.skip = command.earlier;
  sources.all = true;  // this run's processes stay listed once they end: they are what it is about
  reader::LiveReader reader(std::move(sources));
  std::optional<std::string> ended;
  top::ScreenOptions options;
  options.source = command.root;
  options.command_status = [&]() -> std::string {
    if (!ended) ended = command.ended();
    if (ended) return command.name + " " + *ended + "; q for the summary. Its output: " + command.output;
    return command.name + " (pid " + std::to_string(command.pid) + ") runs; its output goes to " + command.output +
           ". q stops watching";
  };
  std::string why;
  if (top::run_screen(reader, options, why) < 0) {
    std::fprintf(stderr, "gpumemprof run: no live view: %s; the command runs on\n", why.c_str());
  }
}

}  // namespace gmp::tool
