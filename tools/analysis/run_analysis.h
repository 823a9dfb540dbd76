// One replay of a run directory's trace, shared by report, diff and html: per device the peaks and
// what was live at the allocated peak, a bounded timeline, the allocations live at exit, and the
// alerts and OOMs as timed markers.
//
// With a window (Options::window, the commands' --since and --until; docs/report.md §Windows) every
// figure is the window's: peaks inside it, markers and samples in it, the timeline across it, and
// "at exit" means at its end; the events before it are replayed silently (reader::TraceReplay).
//
// The trace is read twice, streaming: the first pass finds the event at which each device's
// allocated peak was reached (and replays ranges, marks and pauses), one replay feeding small
// aggregators that each answer one question (replay_step.h); the second replays up to there and
// summarises the live table. The stacks of what was live at the peaks and at exit are
// then symbolised once, grouped by call site and folded into flame graphs (docs/attribution.md).
// Memory grows with the live allocations, distinct call sites and distinct range names, never
// with the event count.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "accounting.h"
#include "attribution_reader.h"
#include "attribution_replay.h"
#include "call_sites.h"
#include "category_levels.h"
#include "device_limit_watch.h"
#include "fine_timeline.h"
#include "flame.h"
#include "live_set.h"
#include "marker_log.h"
#include "peak_watch.h"
#include "run_directory_reader.h"
#include "symbolizer.h"
#include "category_split.h"
#include "trace_replay.h"

namespace gmp::analysis {

// The CUDA graphs a report lists one by one (summary.json lists up to Summary::kMaxGraphsListed).
inline constexpr size_t kGraphsShown = 20;

struct TimelineBucket {
  uint64_t start_ns = 0;  // since the profiler started
  uint64_t allocated_max = 0, reserved_max = 0;
  uint64_t allocated_min = 0, reserved_min = 0;  // the level it was entered at included, like the maxima
  uint64_t allocated_last = 0, reserved_last = 0;
  // The trace position (TraceReplay::index()) just after which allocated first stood at its maximum:
  // the live set there is what was live at the bucket's highest point (timeline_sets.h).
  uint64_t allocated_max_index = 0;
  uint64_t nvml_process_max = 0;  // 0 when no sample with a process figure fell in the bucket
  // The framework level (devices where the bridge attached): tensors' bytes and the framework's segments.
  uint64_t tensors_max = 0, framework_reserved_max = 0;
  uint64_t tensors_last = 0, framework_reserved_last = 0;
  // The tensors by category (tensor_categories.h) when they stood at tensors_max: they add up to it.
  CategoryBytes categories{};
};

struct DeviceAnalysis {
  int device = 0;
  std::string name;
  DeviceStats final_stats;
  PeakPoint allocated_peak, reserved_peak;
  // Device memory live just after the allocated peak's event, as the allocated figure counts it
  // (VMM mappings, no managed memory): its total is the peak.
  LiveSet live_at_peak;
  std::vector<CallSite> sites_at_peak;  // live_at_peak by call site, most bytes first
  FlameNode flame;                      // live_at_peak by stack, root "GPU N"
  std::vector<TimelineBucket> timeline;
  FineTimeline fine;  // Options::fine_slices; empty by default
  uint64_t nvml_process_peak = 0;  // 0 when NVML never named this process's usage
  uint64_t nvml_device_used_peak = 0;
  DeviceLimitFigures limit;
  // The framework level (docs/report.md, "Two levels"): summary.json's devices[].framework, peak
  // times since the profiler started (attached false: the bridge delivered nothing for this
  // device), and the tensors live just after the event that set its allocated peak.
  FrameworkStats framework;
  LiveSet tensors_at_peak;
  std::vector<CallSite> tensor_sites_at_peak;  // tensors_at_peak by call site, most bytes first
  // The tensors at their peak and at exit (the window's end) by category (tensor_categories.h), with
  // the phase the run was in; decided false where nothing told the categories.
  CategorySplit categories_at_peak, categories_at_exit;
  CategoryBytes category_peaks{};  // each category's own peak in the window
  std::optional<Phase> tensor_peak_phase;  // the phase the tensors peaked in
};

struct Options {
  size_t timeline_buckets = 600;
  size_t fine_slices = 0;     // per device, the finer level for zooming (fine_timeline.h); 0: none
  size_t largest = 10;        // allocations listed at the peak and among leaks
  size_t max_markers = 2000;  // further markers are counted, not kept
  size_t max_sites = 20;      // call sites kept per live set
  size_t max_marks = 1000;    // checkpoints kept (the first and last halves); the rest are counted
  size_t max_pauses = 1000;
  bool symbolize = true;      // name the frames of the stacks (off: only ids)
  bool source_lines = true;   // file:line through addr2line, where available
  reader::Window window;      // the whole run by default
  reader::Progress* progress = nullptr;  // ticked through both passes
};

struct RunAnalysis {
  reader::RunDirectory run;
  uint64_t start_ns = 0;        // the trace's start on the event clock
  uint64_t duration_ns = 0;     // last event replayed (the window's last) since start
  // Where the timeline starts: the window's start, or its first memory event when no device held
  // memory there (a program's imports and setup are not drawn as an empty chart).
  uint64_t timeline_from_ns = 0;
  reader::Window window;        // what the figures cover (Options::window)
  Counter host_pinned;          // pinned host memory, its peak the window's
  uint64_t events = 0;
  uint64_t truncated_bytes = 0;
  std::map<int, DeviceAnalysis> devices;  // by ordinal, real devices only
  // Device memory live at exit (linear, pool, vmm handles, arrays, managed), less a framework's
  // cache: its segments are not leaks (summary.json's framework.cached_at_exit counts them).
  LiveSet leaks;
  LiveSet tensor_leaks;         // tensors still allocated at exit
  LiveSet pinned_at_exit;       // pinned host memory live at exit
  std::vector<Marker> markers;  // in time order
  uint64_t markers_dropped = 0;
  // Attribution (docs/attribution.md).
  reader::Attribution attribution;  // attribution.jsonl; present = false without one
  uint64_t stack_events = 0;        // events that carried a stack id
  StackTable stacks;                // symbolised: every stack live at a peak or at exit
  std::vector<CallSite> leak_sites; // leaks by call site
  std::vector<CallSite> tensor_leak_sites;
  Regions regions;                  // ranges, marks, pauses
};

// summary.json's framework object when the bridge attached (tensor-level figures exist), else nullptr.
const Summary::Framework* attached_framework(const RunAnalysis& run);

// Opens and replays `dir`; nullopt with a one-line `error` when it cannot be read.
std::optional<RunAnalysis> analyze_run(const std::string& dir, const Options& options, std::string& error);

}  // namespace gmp::analysis
