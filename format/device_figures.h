// One device's figures as summary.json's and an OOM bundle's metadata.json's "devices" entries hold
// them (docs/run-directory.md). to_json() writes the form through json_views.h device_json() (which
// spells its keys); device_figures_from_json() reads it back, tolerant as json_fields.h is: a
// missing or wrong-typed field reads as 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "figures.h"

namespace gmp {

struct DeviceFigures {
  DeviceStats stats;  // peak times in ns since the profiler started, as written; device -1 when unreadable
  std::string name;
  // "nvml" is an object (the process had NVML); its figures are in stats.nvml.
  bool nvml_listed = false;
  // nvml.processes: [{"pid", "used_bytes"}], every process NVML listed on the device, when the
  // entry carries the list (the collector does not write it); nullopt otherwise.
  std::optional<std::vector<std::pair<uint64_t, uint64_t>>> nvml_processes;  // {pid, used bytes}
};

// `d` with its peak times made relative to `start_ns` (the profiler's start), as written.
DeviceFigures device_figures(const DeviceStats& d, const std::string& name, uint64_t start_ns);
nlohmann::json to_json(const DeviceFigures& f);
DeviceFigures device_figures_from_json(const nlohmann::json& j);

}  // namespace gmp
