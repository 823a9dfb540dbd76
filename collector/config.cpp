#include "config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "device_limit_spec.h"
#include "redact.h"
#include "trace_format.h"

namespace gmp {
namespace {

bool is_blank(std::string_view s) {
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// A value as a warning line may show it: always one line of printable ASCII. \n, \r, \t, \\ and
// \' are spelled so; every other control or non-ASCII byte as \xNN; at most kEchoBytes of the value.
constexpr size_t kEchoBytes = 64;

std::string echo(std::string_view v) {
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

// Applies one variable: `parse` returns false when the text is not acceptable.
class Reader {
 public:
  Reader(const EnvLookup& env, Config& c) : env_(env), c_(c) {}

  template <typename Parse>
  void read(const char* name, const std::string& default_text, const char* accepted, Parse parse) {
    const char* raw = env_(name);
    if (raw == nullptr) return;
    if (!parse(std::string_view(raw))) {
      c_.errors.push_back(std::string("invalid ") + name + "='" + echo(raw) + "': expected " + accepted +
                          "; using the default " + default_text);
    }
  }

 private:
  const EnvLookup& env_;
  Config& c_;
};

// A path: kept byte for byte, but never empty or only whitespace.
auto path_into(std::string& field) {
  return [&field](std::string_view s) {
    if (is_blank(s)) return false;
    field = std::string(s);
    return true;
  };
}

template <typename T>
auto uint_in(T& field, uint64_t lo, uint64_t hi) {
  return [&field, lo, hi](std::string_view s) {
    auto v = parse_uint(s);
    if (!v || *v < lo || *v > hi) return false;
    field = static_cast<T>(*v);
    return true;
  };
}

auto double_in(double& field, double lo, double hi) {
  return [&field, lo, hi](std::string_view s) {
    auto v = parse_double(s);
    if (!v || *v <= lo || *v > hi) return false;
    field = *v;
    return true;
  };
}

}  // namespace

std::string_view log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Trace: return "trace";
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warn: return "warn";
    case LogLevel::Error: return "error";
    case LogLevel::Critical: return "critical";
    case LogLevel::Off: return "off";
  }
  return "warn";
}

Config parse_config(const EnvLookup& env) {
  Config c;
  Reader r(env, c);
  r.read("GPUMEMPROF_ENABLE", "1", "0 or 1 (also true/false, yes/no, on/off)", [&](std::string_view s) {
    auto v = parse_bool(s);
    if (v) c.enable = *v;
    return v.has_value();
  });
  r.read("GPUMEMPROF_OUTPUT", c.output, "a non-empty directory template", path_into(c.output));
  r.read("GPUMEMPROF_LOG_LEVEL", "warn", "one of trace, debug, info, warn, error, critical, off",
         [&](std::string_view s) {
           const std::string v = lower(s);
           for (auto l : {LogLevel::Trace, LogLevel::Debug, LogLevel::Info, LogLevel::Warn,
                          LogLevel::Error, LogLevel::Critical, LogLevel::Off}) {
             if (v == log_level_name(l) || (l == LogLevel::Warn && v == "warning")) {
               c.log_level = l;
               return true;
             }
           }
           return false;
         });
  r.read("GPUMEMPROF_RING_EVENTS", "1048576", "a power of two from 1024 to 67108864", [&](std::string_view s) {
    auto v = parse_uint(s);
    if (!v || *v < 1024 || *v > (1ull << 26) || (*v & (*v - 1)) != 0) return false;
    c.ring_events = *v;
    return true;
  });
  r.read("GPUMEMPROF_TRACE_MAX", "1GiB", "0 (unbounded) or a size of at least 1MiB such as 512M, 1GiB or 20G",
         [&](std::string_view s) {
           auto v = parse_size(s);
           if (!v || (*v != 0 && *v < kMinTraceMax)) return false;
           c.trace_max = *v;
           return true;
         });
  r.read("GPUMEMPROF_STACKS", "16", "an integer from 0 (off) to 128", uint_in(c.stacks, 0, 128));
  r.read("GPUMEMPROF_PYTHON_STACKS", "1", "0 or 1 (also true/false, yes/no, on/off)", [&](std::string_view s) {
    auto v = parse_bool(s);
    if (v) c.python_stacks = *v;
    return v.has_value();
  });
  r.read("GPUMEMPROF_FRAMEWORK", "auto", "auto, unverified or off", [&](std::string_view s) {
    if (s == "auto") c.framework = FrameworkMode::Auto;
    else if (s == "unverified") c.framework = FrameworkMode::Unverified;
    else if (s == "off") c.framework = FrameworkMode::Off;
    else return false;
    return true;
  });
  r.read("GPUMEMPROF_SAMPLE_MS", "100", "an integer from 0 (off) to 3600000", uint_in(c.sample_ms, 0, 3'600'000));
  r.read("GPUMEMPROF_WARN_PERCENT", "80", "a number in (0, 100]", double_in(c.warn_percent, 0, 100));
  r.read("GPUMEMPROF_CRITICAL_PERCENT", "95", "a number in (0, 100]", double_in(c.critical_percent, 0, 100));
  r.read("GPUMEMPROF_FRAGMENTATION", "0.3", "a number in (0, 1]", double_in(c.fragmentation, 0, 1));
  r.read("GPUMEMPROF_LEAK_BYTES", "100MiB", "a positive size such as 512M, 100MiB or 2G", [&](std::string_view s) {
    auto v = parse_size(s);
    if (!v || *v == 0) return false;
    c.leak_bytes = *v;
    return true;
  });
  r.read("GPUMEMPROF_ON_ALERT", "none", "a command (program and arguments separated by spaces)",
         [&](std::string_view s) {
           c.on_alert = is_blank(s) ? std::string() : std::string(s);  // split on whitespace when run
           return true;
         });
  r.read("GPUMEMPROF_OOM_DIR", "<run dir>/oom", "a non-empty directory path", path_into(c.oom_dir));
  r.read("GPUMEMPROF_OOM_EVENTS", "10000", "an integer from 0 to 10000000", uint_in(c.oom_events, 0, 10'000'000));
  r.read("GPUMEMPROF_OOM_MAX_DUMPS", "5", "an integer from 1 to 100000", uint_in(c.oom_max_dumps, 1, 100'000));
  r.read("GPUMEMPROF_OOM_MAX_TOTAL_MB", "256", "an integer from 1 to 1048576",
         uint_in(c.oom_max_total_mb, 1, 1u << 20));
  r.read("GPUMEMPROF_OOM_WAIT_MS", "5000", "an integer from 0 to 600000", uint_in(c.oom_wait_ms, 0, 600'000));
  r.read("GPUMEMPROF_METRICS_DIR", "none", "a non-empty directory path", path_into(c.metrics_dir));
  r.read("GPUMEMPROF_METRICS_INTERVAL_MS", "5000", "an integer from 100 to 3600000",
         uint_in(c.metrics_interval_ms, 100, 3'600'000));
  r.read("GPUMEMPROF_DEVICE_LIMIT", "none (the device's own size)", device_limit_form().c_str(),
         [&](std::string_view s) {
           if (!parse_device_limit(s)) return false;
           c.device_limit = std::string(s);
           return true;
         });
  if (c.critical_percent < c.warn_percent) {
    c.errors.push_back("GPUMEMPROF_CRITICAL_PERCENT is below GPUMEMPROF_WARN_PERCENT; using 80 and 95");
    c.warn_percent = 80;
    c.critical_percent = 95;
  }
  return c;
}

Config config_from_environment() {
  return parse_config([](const char* name) { return std::getenv(name); });
}

ConfigRecord config_record(const Config& c) {
  ConfigRecord r;
  r.enable = c.enable;
  r.output = c.output;
  r.log_level = std::string(log_level_name(c.log_level));
  r.ring_events = c.ring_events;
  r.trace_max = c.trace_max;
  r.stacks = c.stacks;
  r.python_stacks = c.python_stacks;
  r.sample_ms = c.sample_ms;
  r.warn_percent = c.warn_percent;
  r.critical_percent = c.critical_percent;
  r.fragmentation = c.fragmentation;
  r.leak_bytes = c.leak_bytes;
  // A command line may carry a webhook URL or a token: recorded redacted (redact.h).
  if (!c.on_alert.empty()) r.on_alert = redact_text(c.on_alert);
  if (!c.oom_dir.empty()) r.oom_dir = c.oom_dir;
  r.oom_events = c.oom_events;
  r.oom_max_dumps = c.oom_max_dumps;
  r.oom_max_total_mb = c.oom_max_total_mb;
  r.oom_wait_ms = c.oom_wait_ms;
  if (!c.metrics_dir.empty()) r.metrics_dir = c.metrics_dir;
  r.metrics_interval_ms = c.metrics_interval_ms;
  if (!c.device_limit.empty()) r.device_limit = c.device_limit;
  return r;
}

}  // namespace gmp
