// JSON forms of events and per-device figures, shared by summary.json, the OOM
// bundles and the tools, so a figure is spelled the same everywhere. (The profiled process's is
// manifest_record.h's process_json().)
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "figures.h"
#include "event.h"

namespace gmp {

// `start_ns` is the profiler's start on the event clock; times are reported relative to it.
nlohmann::json counter_json(const Counter& c);  // {"current", "peak"}
Counter counter_from_json(const nlohmann::json* j);  // a figure missing or not a count reads as 0
nlohmann::json event_json(const Event& e, uint64_t start_ns);
// A device's "framework" object (docs/run-directory.md): the framework level of its figures.
nlohmann::json framework_json(const FrameworkStats& f, uint64_t start_ns);
FrameworkStats framework_from_json(const nlohmann::json* j);  // attached: j is an object
nlohmann::json device_json(const DeviceStats& d, const std::string& name, uint64_t start_ns);
std::string cuda_error_name(int code);

}  // namespace gmp
