// OOM bundles (docs/oom-bundles.md) as the tools see them: the JSON files of one bundle parsed into
// plain structs, and the bundles that belong to a run directory. Parsing never throws and never
// trusts the input: a wrong type, a missing key or an out-of-range number reads as "absent", and
// only what an explanation cannot do without (a parseable metadata.json with a request size) is an
// error, given as one line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gmp::reader {

inline constexpr const char* kOomBundlePrefix = "oom_dump_";

// One allocation as metadata.json's largest_live and allocations.json list them.
struct OomAllocation {
  uint64_t address = 0;
  uint64_t size = 0;
  std::string kind;  // "linear", "pool", "vmm", "array", "managed", "host_pinned"; may be empty
  std::string api;
  int device = -1;
  uint64_t thread = 0;
  std::optional<uint64_t> age_ms;  // at the failure
  uint64_t stack_id = 0;           // 0: no stack captured
};

// One device's figures at the failure (metadata.json devices[], the form of summary.json).
struct OomDeviceFigures {
  int device = -1;
  std::string name;
  uint64_t total_bytes = 0;
  uint64_t allocated = 0, allocated_peak = 0;
  uint64_t reserved = 0, reserved_peak = 0;
  // Current bytes by kind: linear, pool (live allocations), vmm (mapped), array, managed.
  uint64_t linear = 0, pool = 0, vmm = 0, array = 0, managed = 0;
  uint64_t pool_reserved = 0;  // the pools' reserved bytes, from the driver
  uint64_t vmm_physical = 0;   // physical bytes of live cuMemCreate handles
  uint64_t failed_alloc_count = 0;
  // NVML's latest sample before the failure, when the process had NVML (devices[].nvml).
  struct Nvml {
    uint64_t samples = 0, device_used = 0, device_total = 0;
    std::optional<uint64_t> process_used;  // this process's usage; absent when NVML did not say
    // Every process NVML listed on the device, when the bundle carries the list (nvml.processes:
    // [{"pid", "used_bytes"}]); empty otherwise.
    std::vector<std::pair<uint64_t, uint64_t>> processes;  // {pid, used bytes}
    bool has_process_list = false;
  };
  std::optional<Nvml> nvml;
};

struct OomRequest {
  std::string api, kind, error_name;
  uint64_t size = 0;
  int device = -1;  // -1: none (pinned host memory) or unknown
  uint64_t stream = 0;
  uint64_t thread = 0;
  std::optional<int64_t> error;
  std::optional<uint64_t> t_ns;  // since the profiler started (the process's first GPU memory call)
};

struct OomRecoveredBy {
  std::string api;
  uint64_t size = 0;
  std::optional<uint64_t> t_ns;
};

struct OomBundle {
  std::string path;  // the bundle directory as given
  std::string name;  // manifest.json bundle_name, else the directory's last component

  // manifest.json (optional)
  bool has_manifest = false;
  std::string created_at_utc;
  std::string reason;
  std::optional<uint64_t> pid;

  // metadata.json (required)
  OomRequest request;
  std::vector<OomDeviceFigures> devices;
  uint64_t host_pinned_current = 0, host_pinned_peak = 0;
  struct DriverMemory {
    int device = -1;
    uint64_t free = 0, total = 0;
  };
  std::optional<DriverMemory> driver_memory;  // cuMemGetInfo just before the failure was recorded
  uint64_t live_count = 0, live_bytes = 0;
  std::vector<OomAllocation> largest_live;  // as listed (largest first), every device
  bool recovered = false;
  std::optional<OomRecoveredBy> recovered_by;
  uint64_t failures = 0;
  uint64_t episode = 0;

  // allocations.json (optional): every live allocation, every device.
  bool has_allocations = false;
  std::vector<OomAllocation> allocations;

  // environment.json (optional)
  std::string exe, host;
  std::vector<std::string> argv;

  // Problems with the optional files, one line each ("allocations.json is missing").
  std::vector<std::string> notes;

  const OomDeviceFigures* device_figures(int device) const;
};

// The bundle's JSON files by name ("metadata.json", ...), their text; a file that is absent from
// the map is missing. What the fuzzer and read_oom_bundle() feed to the same parser.
using OomBundleFiles = std::map<std::string, std::string>;

// Parses a bundle from its files' text. nullopt with `error` (one line, naming the file and what
// was expected) when metadata.json is missing, not JSON, or has no request with a size.
std::optional<OomBundle> parse_oom_bundle(const std::string& path, const OomBundleFiles& files, std::string& error);

// Reads <dir>/{manifest,metadata,allocations,environment}.json and parses them. events.json is not
// read (it can be large and nothing in an explanation needs it).
std::optional<OomBundle> read_oom_bundle(const std::string& dir, std::string& error);

// True when `dir` looks like a bundle: it holds a metadata.json, or a manifest.json with a
// bundle_name, or it is named oom_dump_* (and holds no trace.gmpt).
bool looks_like_oom_bundle(const std::string& dir);

// The bundle directories (oom_dump_*) directly under `dir`, sorted by name; temporary directories
// of bundles being written (.tmp.oom_dump_*) are not included.
std::vector<std::string> list_oom_bundles(const std::string& dir);

// Where a run directory's bundles are: <run>/oom, and the GPUMEMPROF_OOM_DIR that the run's
// manifest (config.oom_dir; relative paths from the run's cwd) records when one was set. Only
// directories that exist are returned. Bundles in a GPUMEMPROF_OOM_DIR may come from several
// processes: callers keep those whose pid is the run's (manifest.json "pid").
std::vector<std::string> run_oom_dirs(const std::string& run_dir, const nlohmann::json& manifest);

// Sorts bundles oldest first: by created_at_utc, then the sequence number at the end of the name,
// then the name.
void sort_oom_bundles(std::vector<OomBundle>& bundles);

}  // namespace gmp::reader
