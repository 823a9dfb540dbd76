// The figures the accounting keeps (model/accounting.h) as the run directory records them:
// counters with their peaks, per kind, per device, the framework's, live allocations, graphs and
// failed calls. summary.json, the OOM bundles and the tools' JSON write and read these types
// (summary.h, device_figures.h, oom_bundle_schema.h), so they live with the format, apart from the
// engine that computes them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "event.h"

namespace gmp {

struct Counter {
  uint64_t current = 0;
  uint64_t peak = 0;
  void add(uint64_t n) {
    current += n;
    if (current > peak) peak = current;
  }
  void sub(uint64_t n) { current = n > current ? 0 : current - n; }
  void set(uint64_t n) {
    current = n;
    if (current > peak) peak = current;
  }
  void reset_peak() { peak = current; }
};

struct KindStats {
  Counter bytes;
  uint64_t allocs = 0;
  uint64_t frees = 0;
};

// Inside a framework's caching allocator (PyTorch's), from the bridge's events: the two levels our
// users think in (docs/accounting.md §Two levels). allocated is the bytes live tensors asked for,
// torch's requested_bytes.all; reserved is torch's reserved_bytes.all; what the device holds outside the framework is the driver-level
// reserved less the framework's segments.
struct FrameworkStats {
  bool attached = false;  // the bridge delivered this device's allocator events
  Counter allocated;      // requested bytes of live tensors, until their free completes
  Counter reserved;       // the framework's segments (mapped bytes of expandable ones)
  Counter pending_free;   // tensors the program freed whose free has not completed (other streams)
  Counter outside;        // driver-level reserved outside the framework's segments
  uint64_t allocated_peak_ns = 0, reserved_peak_ns = 0, outside_peak_ns = 0;
  uint64_t tensor_allocs = 0, tensor_frees = 0, segment_allocs = 0, segment_frees = 0, ooms = 0;
  // PyTorch's private memory pools (those of torch.cuda.graph and of torch.compile's CUDA graph
  // trees, and user MemPools), by pool id (framework_pool_id()); the default pool is not listed.
  struct Pool {
    Counter reserved;   // its segments
    Counter allocated;  // requested bytes of its live tensors
  };
  std::map<uint64_t, Pool> private_pools;
  // Reserved but not holding tensors: the framework's cache, free blocks and rounding.
  uint64_t cached() const { return reserved.current - std::min(allocated.current, reserved.current); }
  void reset_peaks(uint64_t at_ns);  // Accounting::reset_peaks
};

struct DeviceStats {
  int device = 0;
  uint64_t total_bytes = 0;
  Counter allocated;  // linear + pool + vmm mapped + array + graph
  Counter reserved;   // linear + pools' reserved + vmm physical + array + graph pool reserved
  uint64_t allocated_peak_ns = 0;
  uint64_t reserved_peak_ns = 0;
  std::array<KindStats, kKindCount> by_kind{};
  Counter pool_reserved;
  Counter vmm_physical;
  // The graph memory pool as the driver last reported it (GraphMemory events); each peak is the
  // driver's own high watermark, the largest it reported.
  Counter graph_reserved;
  Counter graph_used;
  uint64_t alloc_count = 0;
  uint64_t free_count = 0;
  uint64_t failed_alloc_count = 0;
  uint64_t released_by_pool_destroy = 0;
  // The latest NVML sample: the device as nvidia-smi sees it, and this process's share of it.
  struct Telemetry {
    uint64_t samples = 0, device_used = 0, device_total = 0, process_used = 0, process_used_peak = 0;
    bool process_known = false;
  } nvml;
  FrameworkStats framework;

  KindStats& kind(Kind k) { return by_kind[static_cast<size_t>(k)]; }
  const KindStats& kind(Kind k) const { return by_kind[static_cast<size_t>(k)]; }
};

struct LiveAllocation {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t timestamp_ns = 0;
  uint64_t pool = 0;  // pool allocations: the pool's handle; graph allocations: the graph's number
  uint32_t thread_id = 0;
  uint32_t stack_id = 0;
  int16_t device = -1;
  Kind kind = Kind::None;
  Api api = Api::None;
  bool free_requested = false;  // tensors: the program let go, the free has not completed
  bool pending_counted = false;  // ... and its completion did not follow at once (in pending_free)
};

// A CUDA graph that has memory nodes or was instantiated (docs/accounting.md §Graph memory): what
// one launch allocates, where it was captured, how it was launched.
struct GraphStats {
  struct Node {
    uint64_t address = 0, size = 0;
    uint32_t stack_id = 0;
    int16_t device = -1;
  };
  static constexpr uint8_t kNoCaptureMode = 0xff;
  static constexpr size_t kMaxStreamsKept = 16;
  uint32_t number = 0;  // 1-based, in the order the run first met the graph
  int16_t device = -1;  // its first allocation node's; -1 while it has none
  bool captured = false;
  uint8_t capture_mode = kNoCaptureMode;  // CUstreamCaptureMode of its capture
  uint32_t stack_id = 0;                  // where it was captured (or its first node added)
  uint64_t capture_stream = 0;
  std::vector<Node> allocs;               // allocation nodes
  std::vector<uint64_t> frees;            // addresses its free nodes release
  uint64_t launches = 0, uploads = 0, instantiations = 0, failed_launches = 0;
  std::vector<uint64_t> streams;          // distinct streams it was launched on (the first 16)
  uint64_t bytes_per_launch() const;      // every allocation node's size
  bool frees_inside(uint64_t address) const;
  uint64_t outliving_bytes() const;       // allocation nodes no free node of this graph releases
};

struct FailedAllocation {
  uint64_t timestamp_ns, size, stream;
  uint32_t thread_id;
  int16_t device;
  Kind kind;
  Api api;
  int16_t result;
};

// One of the framework's segments (a mapped range of an expandable one), as an OOM bundle lists it.
struct FrameworkSegment {
  uint64_t address, size;
  int16_t device;
  uint64_t pool = 0;  // the framework's pool id; 0 the default pool
};

}  // namespace gmp
