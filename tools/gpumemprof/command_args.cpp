#include "command_args.h"

#include "value_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>

#include "human_text.h"

namespace gmp::tool {
namespace {

struct Unit {
  std::string_view name;
  uint64_t scale;
};

// Digits with at most one '.', then one of `units`; nullopt otherwise or above 2^64 - 1. A whole
// number is exact; a fraction is computed in double and rounded. (Sizes: settings/value_text.h.)
std::optional<uint64_t> parse_scaled(std::string_view s, std::span<const Unit> units) {
  const size_t unit_at = std::min(s.find_first_not_of("0123456789."), s.size());
  const std::string_view number = s.substr(0, unit_at);
  const std::string_view unit = s.substr(unit_at);
  auto u = std::find_if(units.begin(), units.end(), [&](const Unit& x) { return x.name == unit; });
  const size_t dot = number.find('.');
  if (u == units.end() || number.empty() || number == "." || number.find('.', dot + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  const double value = std::strtod(std::string(number).c_str(), nullptr) * static_cast<double>(u->scale);
  if (value >= 0x1p64) return std::nullopt;
  if (dot == std::string_view::npos && number.size() <= 19) {  // exact: no double rounding
    const uint64_t whole = std::strtoull(std::string(number).c_str(), nullptr, 10);
    if (whole <= UINT64_MAX / u->scale) return whole * u->scale;
  }
  return static_cast<uint64_t>(std::llround(value));
}

constexpr Unit kDurationUnits[] = {{"ns", 1}, {"us", 1'000}, {"ms", 1'000'000}, {"s", 1'000'000'000},
                                   {"m", 60'000'000'000}, {"h", 3'600'000'000'000}};
}  // namespace

std::optional<int> parse_path_args(const CommandOptions& command, int argc, char** argv, PathArgs& out,
                                   const OtherOption& other) {
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(help_text(command).c_str(), stdout);
      return 0;
    }
  }
  for (int i = 0; i < argc; ++i) {
    const Option* o = find_option(command, argv[i]);
    if (o != nullptr && !std::strcmp(o->name, "--json")) {
      out.json = true;
    } else if (o != nullptr && other) {
      if (auto status = other(*o, argc, argv, i)) return status;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "gpumemprof %s: unknown option '%s'; accepted: %s\n", command.command, argv[i],
                   accepted_options(command).c_str());
      return 2;
    } else {
      out.paths.push_back(argv[i]);
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> parse_duration_ns(std::string_view text) {
  return parse_scaled(text, kDurationUnits);
}

std::optional<uint64_t> parse_byte_size(std::string_view text) { return parse_size(text); }  // settings/value_text.h

std::optional<int> take_window_args(const char* command, int& argc, char** argv, reader::Window& window) {
  int kept = 0;
  std::string since_text = "0s", until_text;  // as given, for the message below
  // With --help the usage is all that is printed, whatever else the line holds.
  const bool help =
      std::any_of(argv, argv + argc, [](const char* a) { return !std::strcmp(a, "--help") || !std::strcmp(a, "-h"); });
  for (int i = 0; i < argc; ++i) {
    const bool since = is_option(argv[i], "--since");
    if (!since && !is_option(argv[i], "--until")) {
      argv[kept++] = argv[i];
      continue;
    }
    const char* name = since ? "--since" : "--until";
    auto v = option_value(argc, argv, i);
    auto ns = v ? parse_duration_ns(*v) : std::nullopt;
    if (!ns && help) continue;
    if (!ns) {
      std::fprintf(stderr, "gpumemprof %s: %s '%s' is not a time since the profiler started; accepted: %s\n",
                   command, name, v ? v->c_str() : "", kDurationForm);
      return 2;
    }
    (since ? since_text : until_text) = *v;
    if (since) window.since_ns = *ns;
    else window.until_ns = *ns;
  }
  argc = kept;
  if (!help && window.until_ns && window.since_ns > *window.until_ns) {
    std::fprintf(stderr, "gpumemprof %s: --since %s is after --until %s; accepted: --since no later than --until\n",
                 command, since_text.c_str(), until_text.c_str());
    return 2;
  }
  return std::nullopt;
}

std::optional<std::string> window_past_end(const reader::Window& window, uint64_t duration_ns) {
  if (window.since_ns <= duration_ns) return std::nullopt;
  return "--since " + human_duration_ns(window.since_ns) + " is after the run's last event at " +
         human_duration_ns(duration_ns) + "; accepted: a --since within the run";
}

std::string window_text(const reader::Window& window) {
  return "from " + human_duration_ns(window.since_ns) + " to " +
         (window.until_ns ? human_duration_ns(*window.until_ns) : std::string("the end"));
}

}  // namespace gmp::tool
