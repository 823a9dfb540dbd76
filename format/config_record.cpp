#include "config_record.h"

#include "json_fields.h"

namespace gmp {
namespace {

using nlohmann::json;
using reader::member;

double number_or(const json* j, double fallback) {
  return j != nullptr && j->is_number() ? j->get<double>() : fallback;
}

}  // namespace

json to_json(const ConfigRecord& c) {
  return {
      {"enable", c.enable},
      {"output", c.output},
      {"log_level", c.log_level},
      {"ring_events", c.ring_events},
      {"trace_max", c.trace_max},
      {"stacks", c.stacks},
      {"python_stacks", c.python_stacks},
      {"tensor_stacks", c.tensor_stacks},
      {"sample_ms", c.sample_ms},
      {"warn_percent", c.warn_percent},
      {"critical_percent", c.critical_percent},
      {"fragmentation", c.fragmentation},
      {"leak_bytes", c.leak_bytes},
      {"on_alert", reader::or_null(c.on_alert)},
      {"oom_dir", reader::or_null(c.oom_dir)},
      {"oom_events", c.oom_events},
      {"oom_max_dumps", c.oom_max_dumps},
      {"oom_max_total_mb", c.oom_max_total_mb},
      {"oom_wait_ms", c.oom_wait_ms},
      {"metrics_dir", reader::or_null(c.metrics_dir)},
      {"metrics_interval_ms", c.metrics_interval_ms},
      {"device_limit", reader::or_null(c.device_limit)},
      {"categories", c.categories},
      {"live", c.live},
      {"live_registry", reader::or_null(c.live_registry)},
  };
}

ConfigRecord config_record_from_json(const json* j) {
  ConfigRecord c;
  if (j == nullptr || !j->is_object()) return c;
  c.enable = reader::as_bool(member(j, "enable")).value_or(c.enable);
  c.output = reader::str_or(member(j, "output"));
  c.log_level = reader::str_or(member(j, "log_level"));
  c.ring_events = reader::u64_or(member(j, "ring_events"));
  c.trace_max = reader::u64_or(member(j, "trace_max"));
  c.stacks = reader::u64_or(member(j, "stacks"));
  c.python_stacks = reader::as_bool(member(j, "python_stacks")).value_or(c.python_stacks);
  c.tensor_stacks = reader::as_string(member(j, "tensor_stacks")).value_or(c.tensor_stacks);
  c.sample_ms = reader::u64_or(member(j, "sample_ms"));
  c.warn_percent = number_or(member(j, "warn_percent"), c.warn_percent);
  c.critical_percent = number_or(member(j, "critical_percent"), c.critical_percent);
  c.fragmentation = number_or(member(j, "fragmentation"), c.fragmentation);
  c.leak_bytes = reader::u64_or(member(j, "leak_bytes"));
  c.on_alert = reader::as_string(member(j, "on_alert"));
  c.oom_dir = reader::as_string(member(j, "oom_dir"));
  c.oom_events = reader::u64_or(member(j, "oom_events"));
  c.oom_max_dumps = reader::u64_or(member(j, "oom_max_dumps"));
  c.oom_max_total_mb = reader::u64_or(member(j, "oom_max_total_mb"));
  c.oom_wait_ms = reader::u64_or(member(j, "oom_wait_ms"));
  c.metrics_dir = reader::as_string(member(j, "metrics_dir"));
  c.metrics_interval_ms = reader::u64_or(member(j, "metrics_interval_ms"));
  c.device_limit = reader::as_string(member(j, "device_limit"));
  c.categories = reader::as_bool(member(j, "categories")).value_or(c.categories);
  c.live = reader::as_bool(member(j, "live")).value_or(c.live);
  c.live_registry = reader::as_string(member(j, "live_registry"));
  return c;
}

}  // namespace gmp
