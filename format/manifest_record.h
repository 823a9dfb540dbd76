// manifest.json of a run directory (docs/run-directory.md): who and what was profiled. The
// collector fills a ManifestRecord and writes it through to_json(); the tools read it through
// from_json(), which takes any JSON without throwing: a field that is missing or of the wrong type
// reads as the default its comment gives, never as an error, because a run killed early or a
// manifest edited by hand is still worth reading.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config_record.h"
#include "process_record.h"

namespace gmp {

// A device as manifest.json and an OOM bundle's metadata list it.
struct DeviceEntry {
  std::optional<int> ordinal;           // nullopt: not an integer from -1 to 32767
  std::optional<std::string> name;      // nullopt: not a string
  std::optional<uint64_t> total_bytes;  // nullopt: not a non-negative integer
  bool operator==(const DeviceEntry&) const = default;
};

nlohmann::json to_json(const DeviceEntry& d);  // {"ordinal", "name", "total_bytes"}; a nullopt as null
DeviceEntry device_entry_from_json(const nlohmann::json& j);

struct ManifestRecord {
  // The process, with the same keys as process_json() below.
  std::optional<uint64_t> pid;  // nullopt: not a non-negative integer
  uint64_t ppid = 0;            // 0: not a non-negative integer
  std::string exe;              // "": not a string (so are the other strings)
  std::optional<std::vector<std::string>> argv;  // nullopt: not an array; elements not strings are left out
  std::string cwd, host;
  // The job (process_record.h's JobIdentity). A rank, local rank or world size is a non-negative
  // integer or null; rank also reads the decimal string older manifests wrote (with "0" for none).
  std::optional<uint64_t> rank, local_rank, world_size;  // nullopt: null, or not such a number
  std::string launcher, job_id, invocation;              // "": null, or not a string
  int64_t cuda_driver_version = 0;  // 0: not an integer
  // The run.
  std::string tool_version;
  std::string start_time_utc;         // "2024-05-01T12:00:00.000Z"
  uint64_t start_realtime_ns = 0;     // 0: not a non-negative integer (as the rest)
  uint64_t start_monotonic_ns = 0;    // the event clock at the start
  ConfigRecord config;                // the collector's settings
  std::vector<DeviceEntry> devices;   // in the order first used; empty: not an array
  bool operator==(const ManifestRecord&) const = default;
};

// The process fields of a manifest from what the collector knows of it.
ManifestRecord process_manifest(const ProcessInfo& info);

// Adds "schema_version" 1, "tool" and "trace" (the trace file's name, version and event size).
nlohmann::json to_json(const ManifestRecord& m);
// False, leaving `out` as default, when `j` is not an object; otherwise true with each field read
// as its comment says.
bool from_json(const nlohmann::json& j, ManifestRecord& out);

// {"pid", "ppid", "exe", "argv", "cwd", "host", "rank", "local_rank", "world_size", "launcher", "job_id",
// "invocation", "cuda_driver_version"}: the process as
// manifest.json and an OOM bundle's environment.json describe it.
nlohmann::json process_json(const ProcessInfo& info);

}  // namespace gmp
