// `gpumemprof top`: the profiled processes running now, from their live files (docs/live.md,
// "gpumemprof top"). The reading is tools/reader/live_reader.h's; the table top_table.h's, the
// screen top_screen.h's. Every value is checked before anything is read.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "command_options.h"
#include "config_rules.h"
#include "commands.h"
#include "human_text.h"
#include "json_text.h"
#include "live_reader.h"
#include "live_registry.h"
#include "output_streams.h"
#include "top_screen.h"
#include "top_table.h"

namespace gmp::tool {
namespace {

struct TopArgs {
  bool once = false, json = false;
  double interval_s = 1.0;
  reader::LiveSources sources;
};

// A number of seconds, decimals allowed ("0.5", "2", "1e1" is not one); nullopt otherwise or below
// `min`. At most a day: a larger value is a typo, and it must fit the nanoseconds it becomes.
std::optional<double> parse_seconds(const std::string& text, double min) {
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos) return std::nullopt;
  if (text.find('.') != text.rfind('.') || text == ".") return std::nullopt;
  const double v = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(v) || v < min || v > 86400) return std::nullopt;
  return v;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "gpumemprof top: %s\n", message.c_str());
  return 2;
}

// Nothing when taken, else the exit status after one line.
std::optional<int> parse(int argc, char** argv, TopArgs& args) {
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(help_text(kTopOptions).c_str(), stdout);
      return 0;
    }
  }
  for (int i = 0; i < argc; ++i) {
    const Option* o = find_option(kTopOptions, argv[i]);
    if (o == nullptr) {
      if (argv[i][0] == '-' && argv[i][1] != '\0') {
        return fail(std::string("unknown option '") + argv[i] + "'; accepted: " + accepted_options(kTopOptions));
      }
      return fail(std::string("takes no argument, got '") + argv[i] +
                  "'; accepted: options only (--root DIR for the run directories under DIR)");
    }
    const std::string name = o->name;
    if (name == "--once") args.once = true;
    else if (name == "--json") args.json = true;
    else if (name == "--all") args.sources.all = true;
    if (o->value == nullptr) continue;
    const std::optional<std::string> value = option_value(argc, argv, i);
    if (!value) return fail(name + " needs a value; accepted: " + name + " " + o->value);
    if (name == "--root") {
      if (value->empty()) return fail("--root needs a directory; accepted: --root DIR");
      args.sources.root = *value;
    } else if (name == "--interval") {
      const std::optional<double> s = parse_seconds(*value, 0.1);
      if (!s) {
        return fail("invalid --interval '" + *value +
                    "'; accepted: a number of seconds from 0.1 to 86400, decimals allowed (0.5, 2)");
      }
      args.interval_s = *s;
    } else if (name == "--keep") {
      const std::optional<double> s = parse_seconds(*value, 0);
      if (!s) {
        return fail("invalid --keep '" + *value +
                    "'; accepted: a number of seconds from 0 to 86400, decimals allowed (30, 0.5)");
      }
      args.sources.keep_ns = static_cast<uint64_t>(std::llround(*s * 1e9));
    }
  }
  return std::nullopt;
}

std::string source_text(const TopArgs& args) {
  return args.sources.root ? *args.sources.root : "the registry " + args.sources.registry;
}

// --once and --json: one refresh, printed.
int print_once(const TopArgs& args) {
  reader::LiveReader reader(args.sources);
  const uint64_t now = top::clock_ns(CLOCK_REALTIME);
  const reader::LiveScan scan = reader.refresh(now);
  if (!scan.error.empty()) return fail(scan.error);
  for (const std::string& u : scan.unreadable) std::fprintf(stderr, "gpumemprof top: skipped %s\n", u.c_str());
  if (args.json) {
    stdout_carries_data();
    std::printf("%s\n", json_text(top::scan_json(scan, now), 2).c_str());
    return 0;
  }
  std::vector<top::Row> rows = top::build_rows(scan, now);
  top::sort_rows(rows, top::kAllocated, false);
  // On a terminal the table fits it; into a file or a pipe every column is kept.
  const size_t width = isatty(STDOUT_FILENO) ? output_width() : SIZE_MAX;
  std::printf("%s\n", top::header_text(scan.processes.size(), now).c_str());
  for (const std::string& line : top::table_lines(rows, width)) std::printf("%s\n", line.c_str());
  if (scan.processes.empty()) std::printf("no profiled process found in %s\n", source_text(args).c_str());
  return 0;
}

}  // namespace

int top_main(int argc, char** argv) {
  TopArgs args;
  // The settings' rule names the variable (settings/config_rules.h).
  const char* configured = std::getenv(settings::live_registry.name);
  args.sources.registry = live::registry_dir(configured ? configured : "", geteuid());
  if (auto status = parse(argc, argv, args)) return *status;
  if (args.once || args.json || !isatty(STDOUT_FILENO)) return print_once(args);
  reader::LiveReader reader(args.sources);
  std::string why;
  const int status = top::run_screen(reader, {args.interval_s, source_text(args)}, why);
  if (status >= 0) return status;
  std::fprintf(stderr, "gpumemprof top: %s; showing the table once (as --once)\n", why.c_str());
  return print_once(args);
}

}  // namespace gmp::tool
