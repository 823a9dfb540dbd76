// GPUMEMPROF_* environment configuration (docs/configuration.md). Parsing never fails: an invalid
// value keeps the default and leaves one explanatory line in `errors`, printed once by the session.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config_record.h"
#include "value_text.h"

namespace gmp {

enum class LogLevel { Trace, Debug, Info, Warn, Error, Critical, Off };
// GPUMEMPROF_FRAMEWORK (docs/framework-bridge.md): whether the bridge attaches to PyTorch's allocator.
enum class FrameworkMode { Auto, Unverified, Off };
// GPUMEMPROF_TENSOR_STACKS: what a PyTorch tensor's allocation records. Python frames by default (as
// PyTorch's own memory history): the native frames under a tensor are PyTorch's dispatcher and
// allocator, the same for every tensor, and walking them costs more than the rest of the event.
enum class TensorStacks { Python, All };

struct Config {
  bool enable = true;
  std::string output = "gpumemprof.%e.%p";
  LogLevel log_level = LogLevel::Warn;
  uint64_t ring_events = 1u << 20;
  uint64_t trace_max = 1ull << 30;  // bytes of trace kept on disk; 0: unbounded (docs/configuration.md)
  uint32_t stacks = 16;       // return addresses per allocation event; 0: no stacks
  bool python_stacks = true;  // Python frames too, where the allocating thread holds the GIL
  TensorStacks tensor_stacks = TensorStacks::Python;
  FrameworkMode framework = FrameworkMode::Auto;
  bool categories = true;  // GPUMEMPROF_CATEGORIES: the bootstrap labels tensors by category (docs/framework-bridge.md)
  uint32_t sample_ms = 100;
  double warn_percent = 80;
  double critical_percent = 95;
  double fragmentation = 0.3;
  uint64_t leak_bytes = 100ull << 20;
  std::string on_alert;  // command run on every alert; empty: none
  std::string oom_dir;   // empty: <run dir>/oom
  uint64_t oom_events = 10000;
  uint64_t oom_max_dumps = 5;
  uint64_t oom_max_total_mb = 256;
  uint64_t oom_wait_ms = 5000;  // how long a failing call waits for its bundle
  std::string metrics_dir;      // where the Prometheus textfile goes (docs/metrics.md); empty: none
  uint64_t metrics_interval_ms = 5000;
  bool live = true;           // live.bin and a registry entry, for gpumemprof top (docs/live.md)
  std::string live_registry;  // the registry's directory; empty: /tmp/gpumemprof-UID (live_registry.h)
  bool watchdog_trim = false;  // GPUMEMPROF_WATCHDOG=trim: trim pools on a critical alert (watchdog.h)
  uint64_t watchdog_min_interval_ms = 30000;
  std::string device_limit;  // GPUMEMPROF_DEVICE_LIMIT as given (docs/device-limit.md); empty: none

  std::vector<std::string> errors;  // one line per rejected variable
};

using EnvLookup = std::function<const char*(const char*)>;

Config parse_config(const EnvLookup& getenv_fn);
Config config_from_environment();
// The settings as manifest.json records them (format/config_record.h).
ConfigRecord config_record(const Config& c);

std::string_view log_level_name(LogLevel l);

}  // namespace gmp
