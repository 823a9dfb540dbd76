// The values of the GPUMEMPROF_* settings (docs/configuration.md): each variable's default, what
// it accepts and how its text is parsed. One table for the collector, which reads the environment
// (a bad value keeps the default, with a warning), and for `gpumemprof run`, which refuses a bad
// option before it starts anything, so that both accept exactly the same values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace gmp {

// GPUMEMPROF_TRACE_MAX: the least non-zero cap (a megabyte: eight segments of 128 KiB).
inline constexpr uint64_t kMinTraceMax = 1ull << 20;

// A parsed value: a flag, a count or size, a number, or a text (a path, a command). A choice
// (log level, framework mode) is its index in the rule's list of names below.
using SettingValue = std::variant<bool, uint64_t, double, std::string>;

struct SettingRule {
  const char* name;          // the environment variable
  const char* default_text;  // the default as a message names it
  const char* accepted;      // "a number in (0, 100]": what a message says is accepted
  std::optional<SettingValue> (*parse)(std::string_view text);  // nullopt: not acceptable
};

// In the order of the collector's LogLevel and FrameworkMode (collector/config.h).
inline constexpr const char* kLogLevelNames[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
inline constexpr const char* kFrameworkModeNames[] = {"auto", "unverified", "off"};
// GPUMEMPROF_TENSOR_STACKS, named as PyTorch's _record_memory_history(stacks=...) names them.
inline constexpr const char* kTensorStacksNames[] = {"python", "all"};

namespace settings {
extern const SettingRule enable, output, log_level, ring_events, trace_max, stacks, python_stacks, tensor_stacks, framework, categories,
    sample_ms, warn_percent, critical_percent, fragmentation, leak_bytes, on_alert, oom_dir, oom_events,
    oom_max_dumps, oom_max_total_mb, oom_wait_ms, metrics_dir, metrics_interval_ms, live, live_registry, watchdog, watchdog_min_interval_ms,
    device_limit;
}  // namespace settings

// The alert thresholds' defaults, and whether a pair may be used: the critical level below the
// warning would fire critical alerts before warnings.
inline constexpr double kDefaultWarnPercent = 80, kDefaultCriticalPercent = 95;
inline bool thresholds_ordered(double warn, double critical) { return critical >= warn; }

// A value as a one-line message may show it: printable ASCII only. \n, \r, \t, \\ and \' are
// spelled so; every other control or non-ASCII byte as \xNN; at most 64 bytes of it, then "...".
std::string echo_value(std::string_view v);

}  // namespace gmp
