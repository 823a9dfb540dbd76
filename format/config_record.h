// The profiler's settings as manifest.json's "config" records them: what the collector ran with
// after parsing its environment (collector/config.h, docs/configuration.md). The collector fills a
// ConfigRecord and writes it through to_json(); the tools read it through config_record_from_json(),
// which never throws: a field that is missing or of the wrong type reads as its default below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gmp {

struct ConfigRecord {
  bool enable = true;
  std::string output;
  std::string log_level;  // by name: "trace" ... "off"
  uint64_t ring_events = 0;
  uint64_t trace_max = 0;  // GPUMEMPROF_TRACE_MAX in bytes; 0: unbounded (also in runs older than it)
  uint64_t stacks = 0;
  bool python_stacks = true;
  std::string tensor_stacks = "python";  // GPUMEMPROF_TENSOR_STACKS by name (runs older than it: python)
  uint64_t sample_ms = 0;
  double warn_percent = 0;
  double critical_percent = 0;
  double fragmentation = 0;
  uint64_t leak_bytes = 0;
  std::optional<std::string> on_alert;  // redacted (collector/redact.h); nullopt (null): none
  std::optional<std::string> oom_dir;   // nullopt (null): the default, <run dir>/oom
  uint64_t oom_events = 0;
  uint64_t oom_max_dumps = 0;
  uint64_t oom_max_total_mb = 0;
  uint64_t oom_wait_ms = 0;
  std::optional<std::string> metrics_dir;  // nullopt (null): no metrics file (docs/metrics.md)
  uint64_t metrics_interval_ms = 0;
  std::optional<std::string> device_limit;  // GPUMEMPROF_DEVICE_LIMIT as given; nullopt (null): none
  bool categories = true;                    // GPUMEMPROF_CATEGORIES (runs older than it: true, none were labelled)
  bool live = true;                          // GPUMEMPROF_LIVE (runs older than it: true, they had none)
  std::optional<std::string> live_registry;  // GPUMEMPROF_LIVE_REGISTRY; nullopt (null): /tmp/gpumemprof-UID
  bool operator==(const ConfigRecord&) const = default;
};

nlohmann::json to_json(const ConfigRecord& c);
ConfigRecord config_record_from_json(const nlohmann::json* j);  // null or not an object: all defaults

}  // namespace gmp
