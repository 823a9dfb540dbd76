// The JSON files of an OOM bundle (docs/oom-bundles.md), typed: what the collector's flight
// recorder writes (collector/oom_recorder.cpp) and what the tools read back
// (tools/reader/oom_bundle_reader.cpp). Each file's form has one to_json and one from_json here. The
// parts shared with other files are written by json_views.h (a device's figures: device_json; an
// event: event_json; the process: process_json) and read here. Every from_json is tolerant as
// json_fields.h is: never throws, a missing or wrong-typed field reads as its default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "figures.h"
#include "device_figures.h"
#include "event_fields.h"

namespace gmp {

inline constexpr const char* kOomBundlePrefix = "oom_dump_";  // a bundle directory's name begins so
inline constexpr const char* kOomManifestFile = "manifest.json";
inline constexpr const char* kOomMetadataFile = "metadata.json";
inline constexpr const char* kOomEventsFile = "events.json";
inline constexpr const char* kOomAllocationsFile = "allocations.json";
inline constexpr const char* kOomEnvironmentFile = "environment.json";
// Written when the process's framework allocator was bridged (docs/framework-bridge.md): its live
// tensors in the form of allocations.json (kind "tensor"), and its segments.
inline constexpr const char* kOomTensorsFile = "tensors.json";
inline constexpr const char* kOomSegmentsFile = "segments.json";
inline constexpr const char* kOomTensorKind = "tensor";

// A bundle directory's name: oom_dump_<YYYYmmddTHHMMSSZ>_<pid>_cuda_<sequence>, the sequence
// counting the process's bundles from 1.
std::string oom_bundle_name(const std::string& utc_timestamp, int pid, uint64_t sequence);
// The sequence number a bundle's name ends with; 0 when it ends with none.
uint64_t oom_bundle_sequence(const std::string& name);

// One live allocation as metadata.json's largest_live and allocations.json list them.
struct OomAllocation {
  uint64_t address = 0;
  uint64_t size = 0;
  std::string kind;  // "linear", "pool", "vmm", "array", "managed", "host_pinned"; may be empty
  std::string api;
  int device = -1;
  uint64_t thread = 0;
  std::optional<uint64_t> age_ms;  // at the failure; the collector always writes it
  uint64_t stack_id = 0;           // 0: no stack captured
};

// `a` as a bundle lists it, `now_ns` being the failure's time (its age is measured to it).
OomAllocation oom_allocation(const LiveAllocation& a, uint64_t now_ns);
nlohmann::json to_json(const OomAllocation& a);
OomAllocation oom_allocation_from_json(const nlohmann::json& j);
// allocations.json, and the form of largest_live.
nlohmann::json to_json(const std::vector<OomAllocation>& list);
// Entries that are not objects are skipped and counted in `skipped`; not an array: none.
std::vector<OomAllocation> oom_allocations_from_json(const nlohmann::json* list, size_t& skipped);

// segments.json: the framework's segments, [{"address", "size", "device"}] in address order.
nlohmann::json to_json(const std::vector<FrameworkSegment>& segments);

// metadata.json's request: the call that failed.
struct OomRequest {
  std::string api, kind, error_name;
  uint64_t size = 0;
  int device = -1;  // -1: none (pinned host memory) or unknown
  uint64_t stream = 0;
  uint64_t thread = 0;
  std::optional<int64_t> error;
  std::optional<uint64_t> t_ns;  // since the profiler started (the process's first GPU memory call)
};

// metadata.json's driver_memory: cuMemGetInfo just before the failure was recorded.
struct OomDriverMemory {
  int device = -1;
  uint64_t free = 0, total = 0;
};

// metadata.json's device_limit: the failure came from GPUMEMPROF_DEVICE_LIMIT (docs/device-limit.md),
// not from the device: what the process held on it as the limit counts (context included), what the
// call would have added, and the excess over the limit.
struct OomDeviceLimit {
  int device = -1;
  uint64_t limit = 0, held = 0, context = 0, requested = 0;
  uint64_t excess() const { return held + requested > limit ? held + requested - limit : 0; }
};

// metadata.json's recovered_by: the allocation that ended the episode, written whole as an event
// (json_views.h event_json); an explanation reads three of its figures.
struct OomRecoveredBy {
  nlohmann::json event;
  std::string api() const;
  uint64_t size() const;
  std::optional<uint64_t> t_ns() const;

 private:
  const nlohmann::json* field(EventField f) const;
};

// metadata.json's framework: a framework OOM (Op::FrameworkOomFigures), PyTorch's own figures as
// the event carried them, and gpumemprof's count of the same device at that moment.
struct OomFramework {
  int device = -1;
  uint64_t requested = 0;  // "Tried to allocate"
  uint64_t free = 0;       // the device's free bytes, as the framework asked the driver
  uint64_t capacity = 0;   // the device's total, or the memory fraction's limit
  uint64_t allocated = 0;  // allocated_bytes.all.current (block sizes)
  uint64_t reserved = 0;   // reserved_bytes.all.current
  // "this process has X memory in use": NVML's latest sample of the process when there is one,
  // else capacity - free (which also counts other processes).
  uint64_t process_used = 0;
  bool process_used_from_nvml = false;
  uint64_t non_pytorch = 0;  // process_used - reserved: the CUDA context, other libraries
  FrameworkStats accounting;  // the device's framework figures, peak times since the profiler started
};

// `e` an Op::FrameworkOomFigures event; `d` its device's figures after it.
OomFramework oom_framework(const Event& e, const DeviceStats& d, uint64_t start_ns);
nlohmann::json to_json(const OomFramework& f);  // metadata.json's framework

// metadata.json.
struct OomMetadata {
  std::string reason;
  OomRequest request;
  std::vector<DeviceFigures> devices;  // peak times since the profiler started
  Counter host_pinned_bytes;
  std::optional<OomDriverMemory> driver_memory;
  std::optional<OomDeviceLimit> device_limit;
  uint64_t live_count = 0, live_bytes = 0;
  std::vector<OomAllocation> largest_live;  // largest first, every device
  bool recovered = false;
  std::optional<OomRecoveredBy> recovered_by;
  uint64_t failures = 1;  // in the episode
  uint64_t episode = 0;
  std::optional<OomFramework> framework;  // a framework OOM's bundle only
};

nlohmann::json to_json(const OomMetadata& m);
// nullopt with `problem` ("has no request size ...", to follow "metadata.json ") when `j` is not
// an object or has no request with a size: nothing can be explained without them. Entries of
// largest_live that are not objects are skipped and counted in `skipped_largest`.
std::optional<OomMetadata> oom_metadata_from_json(const nlohmann::json& j, std::string& problem,
                                                  size_t& skipped_largest);

// The bundle's manifest.json.
struct OomBundleManifest {
  std::string bundle_name;
  std::string created_at_utc;
  std::string reason;
  std::string backend = "cuda";
  uint64_t event_count = 0;  // entries of events.json
  std::vector<std::string> files;
  std::optional<uint64_t> pid;
};

nlohmann::json to_json(const OomBundleManifest& m);
OomBundleManifest oom_manifest_from_json(const nlohmann::json& j);
// True when `j` has a bundle_name, whatever its value: the mark of a bundle's manifest.json (a run
// directory's has none).
bool is_oom_manifest(const nlohmann::json& j);

// environment.json: the process as process_json() (manifest_record.h) writes it, the devices as
// manifest.json lists them, and the environment, redacted. What the tools read of it.
struct OomEnvironment {
  std::string exe, host;
  std::vector<std::string> argv;
  std::optional<uint64_t> pid;
};

// `process` from process_json(); `devices` manifest.json's device entries; `environment` {NAME: value}.
nlohmann::json oom_environment_json(nlohmann::json process, nlohmann::json devices, nlohmann::json environment);
OomEnvironment oom_environment_from_json(const nlohmann::json& j);

}  // namespace gmp
