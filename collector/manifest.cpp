#include "manifest.h"

namespace gmp {

nlohmann::json manifest_json(const ProcessInfo& info, const Config& config, const std::vector<DeviceEntry>& devices) {
  ManifestRecord m = process_manifest(info);
  m.tool_version = GPUMEMPROF_VERSION;
  m.start_time_utc = iso8601_utc(info.start_realtime_ns);
  m.config = config_record(config);
  m.devices = devices;
  return to_json(m);
}

}  // namespace gmp
