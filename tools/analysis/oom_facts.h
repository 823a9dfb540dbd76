// What `gpumemprof oom` says about one OOM bundle, as facts derived from the parsed bundle
// (tools/reader/oom_bundle_reader.h): what was asked, what the process and the others held, what
// the driver said was free, the biggest holders. oom_advice.h turns the facts into advice and
// oom_render.h prints them as text or JSON. Nothing here throws on any bundle the reader returns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oom_bundle_reader.h"
#include "category_split.h"

namespace gmp::analysis {

// A bundle's figures may be anything: sums and differences of them saturate.
inline uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
inline uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

struct OomExplanation {
  // Which bundle.
  std::string name, path, created_at_utc, exe;
  std::optional<uint64_t> pid;

  // What was requested. host_pinned: pinned host memory, no device.
  OomRequest request;
  std::string device_name;
  bool host_pinned = false;

  // What this process held on the request's device (zeros when the bundle has no figures for it).
  bool device_figures_known = false;
  DeviceStats held;
  uint64_t pool_unused = 0;   // pools' reserved bytes not allocated: released by trimming the pools
  uint64_t vmm_unmapped = 0;  // VMM physical bytes not mapped
  uint64_t host_pinned_bytes = 0;
  uint64_t live_count = 0, live_bytes = 0;  // the whole process (metadata.json)
  std::optional<std::pair<uint64_t, uint64_t>> live_on_device;  // {count, bytes}, from allocations.json

  // The device as the driver saw it just before the failure.
  std::optional<uint64_t> free_bytes;   // cuMemGetInfo
  std::optional<uint64_t> total_bytes;  // cuMemGetInfo, else the device's total as the profiler saw it
  bool total_from_driver = false;
  std::optional<uint64_t> shortfall;  // request - free, when free < request
  std::optional<OomDeviceLimit> device_limit;  // the failure came from GPUMEMPROF_DEVICE_LIMIT

  // Other processes on the device.
  enum class OthersSource { Unknown, NvmlProcessList, NvmlSample, Estimate };
  OthersSource others_source = OthersSource::Unknown;
  std::optional<uint64_t> others_bytes;
  std::vector<std::pair<uint64_t, uint64_t>> other_processes;  // {pid, bytes}: NVML's list only
  uint64_t others_basis_used = 0;  // the device-used figure the estimate or sample started from
  uint64_t others_basis_own = 0;   // what was subtracted as this process's

  // The episode.
  bool recovered = false;
  std::optional<OomRecoveredBy> recovered_by;
  uint64_t failures = 0, episode = 0;

  // The biggest live allocations on the request's device (host_pinned: pinned host memory).
  static constexpr size_t kTopHolders = 10;
  std::vector<OomAllocation> top;
  uint64_t top_candidates = 0;  // how many live allocations the top was chosen from
  bool top_from_allocations = false;
  // Call-site labels of the top's stack ids, when the run directory's attribution.jsonl was
  // found (name_holder_sites); a holder without one shows its stack id.
  std::map<uint64_t, std::string> sites;

  // A framework's OOM (the bundle's metadata.json has "framework"): what PyTorch's own message
  // says, with the same figures, and the tensors it held.
  struct Framework {
    OomFramework figures;
    uint64_t unallocated = 0;  // reserved - allocated: "reserved by PyTorch but unallocated"
    uint64_t tensor_count = 0, tensor_bytes = 0;  // live tensors on the device (tensors.json)
    struct Site {
      uint64_t stack_id = 0, bytes = 0, count = 0;
    };
    static constexpr size_t kTopSites = 5;
    std::vector<Site> sites;  // the tensors' call sites by bytes, largest first; stack id 0: none
  };
  std::optional<Framework> framework;
  // A framework OOM's tensors by category, when the run's trace was found (oom_categories.h), and
  // GPUMEMPROF_CATEGORIES as the run's manifest recorded it.
  std::optional<CategorySplit> categories;
  bool categories_setting = true;

  struct Advice {
    std::string id;  // cannot_fit, recovered, fragmentation, other_processes, own_footprint, ...
    std::string text;
  };
  std::vector<Advice> advice;  // oom_advice() of the facts above
  std::vector<std::string> notes;
};

// The facts of `bundle`, with their advice.
OomExplanation explain_oom(const reader::OomBundle& bundle);

}  // namespace gmp::analysis
