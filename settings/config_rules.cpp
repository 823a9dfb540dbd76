#include "config_rules.h"

#include "device_limit_spec.h"

#include <cctype>
#include <cstdio>
#include <iterator>

#include "value_text.h"

namespace gmp {
namespace {

constexpr const char* kBoolForm = "0 or 1 (also true/false, yes/no, on/off)";

bool is_blank(std::string_view s) {
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::optional<SettingValue> boolean(std::string_view s) {
  if (auto v = parse_bool(s)) return *v;
  return std::nullopt;
}

// A path: kept byte for byte, but never empty or only whitespace.
std::optional<SettingValue> path(std::string_view s) {
  if (is_blank(s)) return std::nullopt;
  return std::string(s);
}

template <uint64_t lo, uint64_t hi>
std::optional<SettingValue> uint_in(std::string_view s) {
  auto v = parse_uint(s);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return *v;
}

// In (lo, hi]: a threshold of 0 would alert on everything.
template <int lo, int hi>
std::optional<SettingValue> double_in(std::string_view s) {
  auto v = parse_double(s);
  if (!v || *v <= lo || *v > hi) return std::nullopt;
  return *v;
}

std::optional<SettingValue> log_level(std::string_view s) {
  const std::string v = lower(s);
  for (size_t i = 0; i < std::size(kLogLevelNames); ++i) {
    if (v == kLogLevelNames[i] || (v == "warning" && std::string_view(kLogLevelNames[i]) == "warn")) {
      return uint64_t{i};
    }
  }
  return std::nullopt;
}

// A choice: its index in `names` (config_rules.h), or nullopt.
template <size_t N>
std::optional<SettingValue> choice(const char* const (&names)[N], std::string_view s) {
  for (size_t i = 0; i < N; ++i) {
    if (s == names[i]) return uint64_t{i};
  }
  return std::nullopt;
}

std::optional<SettingValue> tensor_stacks_mode(std::string_view s) { return choice(kTensorStacksNames, lower(s)); }

std::optional<SettingValue> framework_mode(std::string_view s) { return choice(kFrameworkModeNames, s); }

std::optional<SettingValue> ring_events(std::string_view s) {
  auto v = parse_uint(s);
  if (!v || *v < 1024 || *v > (1ull << 26) || (*v & (*v - 1)) != 0) return std::nullopt;
  return *v;
}

std::optional<SettingValue> trace_max(std::string_view s) {
  auto v = parse_size(s);
  if (!v || (*v != 0 && *v < kMinTraceMax)) return std::nullopt;
  return *v;
}

std::optional<SettingValue> positive_size(std::string_view s) {
  auto v = parse_size(s);
  if (!v || *v == 0) return std::nullopt;
  return *v;
}

// GPUMEMPROF_WATCHDOG: true for "trim".
std::optional<SettingValue> watchdog_mode(std::string_view s) {
  if (s != "off" && s != "trim") return std::nullopt;
  return s == "trim";
}

// GPUMEMPROF_DEVICE_LIMIT: kept as given once it parses (the shim parses it again where it applies).
std::optional<SettingValue> device_limit_text(std::string_view s) {
  if (!parse_device_limit(s)) return std::nullopt;
  return std::string(s);
}
const std::string kDeviceLimitForm = device_limit_form();  // before the rule below, in this file

// Any text; split on whitespace when run, so a blank one is no command.
std::optional<SettingValue> command(std::string_view s) { return is_blank(s) ? std::string() : std::string(s); }

}  // namespace

namespace settings {
const SettingRule enable{"GPUMEMPROF_ENABLE", "1", kBoolForm, boolean};
const SettingRule output{"GPUMEMPROF_OUTPUT", "gpumemprof.%e.%p", "a non-empty directory template", path};
const SettingRule log_level{"GPUMEMPROF_LOG_LEVEL", "warn", "one of trace, debug, info, warn, error, critical, off",
                            gmp::log_level};
const SettingRule ring_events{"GPUMEMPROF_RING_EVENTS", "1048576", "a power of two from 1024 to 67108864",
                              gmp::ring_events};
const SettingRule trace_max{"GPUMEMPROF_TRACE_MAX", "1GiB",
                            "0 (unbounded) or a size of at least 1MiB such as 512M, 1GiB or 20G", gmp::trace_max};
const SettingRule stacks{"GPUMEMPROF_STACKS", "16", "an integer from 0 (off) to 128", uint_in<0, 128>};
const SettingRule python_stacks{"GPUMEMPROF_PYTHON_STACKS", "1", kBoolForm, boolean};
const SettingRule tensor_stacks{"GPUMEMPROF_TENSOR_STACKS", "python", "python or all", tensor_stacks_mode};
const SettingRule framework{"GPUMEMPROF_FRAMEWORK", "auto", "auto, unverified or off", framework_mode};
const SettingRule categories{"GPUMEMPROF_CATEGORIES", "1", kBoolForm, boolean};
const SettingRule sample_ms{"GPUMEMPROF_SAMPLE_MS", "100", "an integer from 0 (off) to 3600000",
                            uint_in<0, 3'600'000>};
const SettingRule warn_percent{"GPUMEMPROF_WARN_PERCENT", "80", "a number in (0, 100]", double_in<0, 100>};
const SettingRule critical_percent{"GPUMEMPROF_CRITICAL_PERCENT", "95", "a number in (0, 100]", double_in<0, 100>};
const SettingRule fragmentation{"GPUMEMPROF_FRAGMENTATION", "0.3", "a number in (0, 1]", double_in<0, 1>};
const SettingRule leak_bytes{"GPUMEMPROF_LEAK_BYTES", "100MiB", "a positive size such as 512M, 100MiB or 2G",
                             positive_size};
const SettingRule on_alert{"GPUMEMPROF_ON_ALERT", "none", "a command (program and arguments separated by spaces)",
                           command};
const SettingRule oom_dir{"GPUMEMPROF_OOM_DIR", "<run dir>/oom", "a non-empty directory path", path};
const SettingRule oom_events{"GPUMEMPROF_OOM_EVENTS", "10000", "an integer from 0 to 10000000",
                             uint_in<0, 10'000'000>};
const SettingRule oom_max_dumps{"GPUMEMPROF_OOM_MAX_DUMPS", "5", "an integer from 1 to 100000", uint_in<1, 100'000>};
const SettingRule oom_max_total_mb{"GPUMEMPROF_OOM_MAX_TOTAL_MB", "256", "an integer from 1 to 1048576",
                                   uint_in<1, 1u << 20>};
const SettingRule oom_wait_ms{"GPUMEMPROF_OOM_WAIT_MS", "5000", "an integer from 0 to 600000", uint_in<0, 600'000>};
const SettingRule metrics_dir{"GPUMEMPROF_METRICS_DIR", "none", "a non-empty directory path", path};
const SettingRule metrics_interval_ms{"GPUMEMPROF_METRICS_INTERVAL_MS", "5000", "an integer from 100 to 3600000",
                                      uint_in<100, 3'600'000>};
const SettingRule live{"GPUMEMPROF_LIVE", "1", kBoolForm, boolean};
const SettingRule live_registry{"GPUMEMPROF_LIVE_REGISTRY", "/tmp/gpumemprof-UID", "a non-empty directory path", path};
const SettingRule watchdog{"GPUMEMPROF_WATCHDOG", "off", "off or trim", watchdog_mode};
const SettingRule watchdog_min_interval_ms{"GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS", "30000",
                                           "an integer from 0 to 86400000", uint_in<0, 86'400'000>};
const SettingRule device_limit{"GPUMEMPROF_DEVICE_LIMIT", "none (the device's own size)", kDeviceLimitForm.c_str(),
                               device_limit_text};
}  // namespace settings

std::string echo_value(std::string_view v) {
  constexpr size_t kEchoBytes = 64;
  std::string out;
  for (size_t i = 0; i < v.size() && i < kEchoBytes; ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          out += static_cast<char>(c);
        } else {
          char hex[5];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        }
    }
  }
  if (v.size() > kEchoBytes) out += "...";
  return out;
}

}  // namespace gmp
