// The arguments shared by several commands: paths and --json (report, diff, oom), and the time
// window and quantities (--since, --until of export, report and html; export's --resolution and
// --min-size). One parser each, so the commands accept and refuse the same things with the same
// messages.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command_options.h"
#include "trace_replay.h"

namespace gmp::tool {

struct PathArgs {
  std::vector<std::string> paths;  // in order; a lone "-" is a path too
  bool json = false;
};

// An option of the command's table other than --json, at argv[i]: nothing when taken (i past its
// value), else the exit status after one line on stderr.
using OtherOption = std::function<std::optional<int>(const Option&, int argc, char** argv, int& i)>;

// Parses `argv` by `command`'s table. --help or -h prints its help on stdout: returns 0. An option
// not in the table prints "gpumemprof COMMAND: unknown option 'X'; accepted: ..." on stderr:
// returns 2. Otherwise fills `out` and returns nothing; how many paths are right is the command's
// to say.
std::optional<int> parse_path_args(const CommandOptions& command, int argc, char** argv, PathArgs& out,
                                   const OtherOption& other = {});

// A duration: a number (decimals allowed) and a unit ns, us, ms, s, m or h ("1.5s", "250ms"), in
// nanoseconds; nullopt when `text` is not one.
std::optional<uint64_t> parse_duration_ns(std::string_view text);
constexpr const char* kDurationForm = "a number with a unit ns, us, ms, s, m or h (e.g. 1.5s, 250ms)";
// A byte size: a number (decimals allowed when they come to whole bytes) and nothing or a unit B,
// K, M, G, T, KiB, MiB, ... in any case, powers of 1024, as the environment's sizes
// (docs/configuration.md).
std::optional<uint64_t> parse_byte_size(std::string_view text);
constexpr const char* kSizeForm = "a byte count with an optional unit K, M, G, KiB, MiB or GiB (e.g. 1M, 512KiB)";

// Takes --since T and --until T (docs/report.md §Windows) out of argv, compacting it, into
// `window`. A missing or bad value, or a since after the until, prints one line naming the option,
// the value and the accepted form: returns 2, before anything is read (unless argv holds --help,
// for the command's parser to print its usage).
std::optional<int> take_window_args(const char* command, int& argc, char** argv, reader::Window& window);

// "from 1.500 s to 3.000 s" or "from 1.500 s to the end": how the outputs name a window.
std::string window_text(const reader::Window& window);
// When --since is past the run's last event (`duration_ns` since the profiler started), the one line
// that says so (the window holds nothing: a peak "at" its start would be made up); else nullopt.
std::optional<std::string> window_past_end(const reader::Window& window, uint64_t duration_ns);

}  // namespace gmp::tool
