// JSON forms of events, live allocations, per-device figures and the profiled process, shared by
// manifest.json, summary.json, the OOM bundles and the tools, so a figure is spelled the same
// everywhere.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "accounting.h"
#include "event.h"
#include "process_record.h"

namespace gmp {

// `start_ns` is the profiler's start on the event clock; times are reported relative to it.
nlohmann::json counter_json(const Counter& c);  // {"current", "peak"}
nlohmann::json event_json(const Event& e, uint64_t start_ns);
nlohmann::json allocation_json(const LiveAllocation& a, uint64_t now_ns);
nlohmann::json device_json(const DeviceStats& d, const std::string& name, uint64_t start_ns);
std::string cuda_error_name(int code);
// {"pid", "ppid", "exe", "argv", "cwd", "host", "rank", "cuda_driver_version"}: the process as
// manifest.json and an OOM bundle's environment.json describe it.
nlohmann::json process_json(const ProcessInfo& info);

}  // namespace gmp
