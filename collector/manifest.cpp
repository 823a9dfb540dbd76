#include "manifest.h"

#include "event.h"
#include "json_views.h"
#include "trace_format.h"

namespace gmp {

nlohmann::json manifest_json(const ProcessInfo& info, const Config& config, const nlohmann::json& devices) {
  nlohmann::json m = process_json(info);
  m.update({
      {"schema_version", 1},
      {"tool", "gpumemprof"},
      {"tool_version", GPUMEMPROF_VERSION},
      {"start_time_utc", iso8601_utc(info.start_realtime_ns)},
      {"start_realtime_ns", info.start_realtime_ns},
      {"start_monotonic_ns", info.start_monotonic_ns},
      {"config", config_to_json(config)},
      {"devices", devices},
      {"trace", {{"file", kTraceFileName}, {"version", kTraceVersion}, {"event_size", sizeof(Event)}}},
  });
  return m;
}

}  // namespace gmp
