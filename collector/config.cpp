#include "config.h"

#include <cstdlib>
#include <string>
#include <type_traits>

#include "config_rules.h"
#include "redact.h"

namespace gmp {
namespace {

// Applies one variable by its rule (settings/config_rules.h), or leaves one line in `errors` and
// the default in place when its text is not acceptable.
class Reader {
 public:
  Reader(const EnvLookup& env, Config& c) : env_(env), c_(c) {}

  template <typename T>
  void read(const SettingRule& rule, T& field) {
    const char* raw = env_(rule.name);
    if (raw == nullptr) return;
    const std::optional<SettingValue> v = rule.parse(raw);
    if (!v) {
      c_.errors.push_back(std::string("invalid ") + rule.name + "='" + echo_value(raw) + "': expected " +
                          rule.accepted + "; using the default " + rule.default_text);
    } else if constexpr (std::is_enum_v<T> || (std::is_integral_v<T> && !std::is_same_v<T, bool>)) {
      field = static_cast<T>(std::get<uint64_t>(*v));  // a choice is its index (config_rules.h)
    } else {
      field = std::get<T>(*v);
    }
  }

 private:
  const EnvLookup& env_;
  Config& c_;
};

}  // namespace

std::string_view log_level_name(LogLevel l) { return kLogLevelNames[static_cast<size_t>(l)]; }

Config parse_config(const EnvLookup& env) {
  Config c;
  Reader r(env, c);
  r.read(settings::enable, c.enable);
  r.read(settings::output, c.output);
  r.read(settings::log_level, c.log_level);
  r.read(settings::ring_events, c.ring_events);
  r.read(settings::trace_max, c.trace_max);
  r.read(settings::stacks, c.stacks);
  r.read(settings::python_stacks, c.python_stacks);
  r.read(settings::tensor_stacks, c.tensor_stacks);
  r.read(settings::framework, c.framework);
  r.read(settings::categories, c.categories);
  r.read(settings::sample_ms, c.sample_ms);
  r.read(settings::warn_percent, c.warn_percent);
  r.read(settings::critical_percent, c.critical_percent);
  r.read(settings::fragmentation, c.fragmentation);
  r.read(settings::leak_bytes, c.leak_bytes);
  r.read(settings::on_alert, c.on_alert);
  r.read(settings::oom_dir, c.oom_dir);
  r.read(settings::oom_events, c.oom_events);
  r.read(settings::oom_max_dumps, c.oom_max_dumps);
  r.read(settings::oom_max_total_mb, c.oom_max_total_mb);
  r.read(settings::oom_wait_ms, c.oom_wait_ms);
  r.read(settings::metrics_dir, c.metrics_dir);
  r.read(settings::metrics_interval_ms, c.metrics_interval_ms);
  r.read(settings::live, c.live);
  r.read(settings::live_registry, c.live_registry);
  r.read(settings::watchdog, c.watchdog_trim);
  r.read(settings::watchdog_min_interval_ms, c.watchdog_min_interval_ms);
  r.read(settings::device_limit, c.device_limit);
  if (!thresholds_ordered(c.warn_percent, c.critical_percent)) {
    c.errors.push_back("GPUMEMPROF_CRITICAL_PERCENT is below GPUMEMPROF_WARN_PERCENT; using 80 and 95");
    c.warn_percent = kDefaultWarnPercent;
    c.critical_percent = kDefaultCriticalPercent;
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
  r.tensor_stacks = kTensorStacksNames[static_cast<size_t>(c.tensor_stacks)];
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
  r.live = c.live;
  r.categories = c.categories;
  if (!c.live_registry.empty()) r.live_registry = c.live_registry;
  return r;
}

}  // namespace gmp
