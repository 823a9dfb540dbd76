// summary.json (docs/run-directory.md §summary.json): the typed form, its one to_json and its
// one from_json. The collector fills it at exit (model/summary_builder.h) and writes it through
// to_json(); the tools read the file through summary_from_json(), and rebuild one from a trace with
// the same builder when the file is missing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "figures.h"
#include "device_figures.h"

namespace gmp {

// One entry of "failed_allocations": a request the driver refused.
struct SummaryFailure {
  std::string api, kind;
  int device = -1;
  uint64_t size = 0;
  int64_t error = 0;  // the CUresult
  uint64_t thread = 0;
  uint64_t at_ns = 0;  // since the profiler started
};

// The values of "ended_by": how the process ended.
inline constexpr const char* kEndedByExit = "exit";           // exit() or a return from main
inline constexpr const char* kEndedByExitCall = "exit_call";  // _exit, _Exit or quick_exit: no exit handlers ran
inline constexpr const char* kEndedBySignal = "signal";       // a fatal signal
inline constexpr const char* kEndedByExec = "exec";           // written before the image was replaced
inline constexpr const char* kEndedByUnknown = "unknown";     // a summary the tools rebuilt from the trace

struct Summary {
  bool clean_exit = true;
  std::string ended_by = kEndedByExit;  // how the process ended: one of the kEndedBy* below
  uint64_t terminated_by_signal = 0;  // written only when not 0
  // The status the process ended with, as its parent sees it (0-255): main's return value or the
  // argument of exit(), _exit(), _Exit() or quick_exit(). Written only when the shim saw it.
  std::optional<int> exit_status;
  // "devices" was an array (from_json); a summary without one is rebuilt from the trace.
  bool devices_listed = true;
  std::vector<DeviceFigures> devices;
  std::optional<DeviceFigures> unattributed;  // ordinal -1: what no device could be named for
  Counter host_pinned_bytes;
  uint64_t host_pinned_allocs = 0, host_pinned_frees = 0;
  struct Events {
    uint64_t recorded = 0;
    uint64_t lost = 0;            // claimed in the ring, never published
    uint64_t producer_waits = 0;
    // Counted but not in the trace (a write failed, our descriptor was taken); written by the
    // collector only, absent from a summary rebuilt from the trace.
    std::optional<uint64_t> unwritten;
    std::optional<std::string> trace_error;  // why a trace write failed; written only when one did
    // False in a summary rebuilt without summary.json: lost, unwritten and producer_waits are not
    // known and are written as null. from_json always reads true.
    bool counts_known = true;
  } events;
  std::optional<uint64_t> trace_events_written;  // written by the collector; absent in older runs
  // The trace on disk under GPUMEMPROF_TRACE_MAX (docs/run-directory.md); written by the collector,
  // absent in older runs and in a summary rebuilt from the trace.
  struct Trace {
    uint64_t max_bytes = 0;         // 0: unbounded
    uint64_t segments = 0;          // segment files written
    uint64_t segments_dropped = 0;  // the oldest ones, deleted to stay within max_bytes
    uint64_t events_dropped = 0;    // the records they held (of trace_events_written)
    uint64_t kept_from_ns = 0;      // since the profiler started: the first kept event (0: nothing dropped)
  };
  std::optional<Trace> trace;
  uint64_t unknown_frees = 0, failed_releases = 0;
  uint64_t live_at_exit_count = 0, live_at_exit_bytes = 0;
  // The framework bridge (docs/framework-bridge.md), when it reported: whether it attached, and
  // the framework's segments still reserved at exit (its cache, never a leak).
  struct Framework {
    std::string name = "pytorch";
    std::string state;  // "attached", "refused" or "detached"
    std::string version;
    std::string refusal;  // framework_refusal_name(), when not attached
    uint64_t cached_at_exit_count = 0, cached_at_exit_bytes = 0;
    // Of live_at_exit: the tensors (the leaks a PyTorch user means); the rest is other libraries'.
    uint64_t tensors_at_exit_count = 0, tensors_at_exit_bytes = 0;
  };
  std::optional<Framework> framework;
  // CUDA graphs with memory nodes or launches (docs/run-directory.md §summary.json, "graphs").
  struct Graph {
    uint64_t number = 0;
    int device = -1;
    std::string origin;        // "capture" or "explicit"
    std::string capture_mode;  // "global", "thread_local", "relaxed"; empty when not captured
    uint64_t alloc_nodes = 0, free_nodes = 0, bytes_per_launch = 0, outliving_bytes = 0;
    uint64_t launches = 0, uploads = 0, instantiations = 0, failed_launches = 0, streams = 0;
    uint64_t stack_id = 0;     // where it was captured; 0 when not known
  };
  std::vector<Graph> graphs;
  uint64_t graphs_total = 0;   // graphs met; graphs lists the first kMaxGraphsListed
  static constexpr size_t kMaxGraphsListed = 1000;
  uint64_t duration_ns = 0;
  std::vector<SummaryFailure> failed_allocations;  // the first 100; from_json: one per array element
  struct Alerts {
    uint64_t warning = 0, critical = 0, fragmentation = 0, growth = 0;
    uint64_t fired() const { return warning + critical + fragmentation + growth; }
  } alerts;
  struct Oom {
    uint64_t failures = 0, bundles_written = 0, recovered = 0;
  } oom;
};

nlohmann::json to_json(const Summary& s);
// Never throws: a missing or wrong-typed field reads as its default (json_fields.h), a "devices"
// that is not an array as none (devices_listed false).
Summary summary_from_json(const nlohmann::json& j);

}  // namespace gmp
