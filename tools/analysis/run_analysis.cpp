#include "run_analysis.h"

#include <algorithm>

#include "summary_figures.h"
#include "run_directory_files.h"
#include "trace_format.h"

namespace gmp::analysis {
namespace {

// A device limit's peak, as the shim counts: reserved plus the context last measured.
void note_limit_peak(DeviceLimitFigures& l, const DeviceStats& d) {
  if (l.limit != 0) l.peak = std::max(l.peak, d.reserved.current + l.context);
}

bool changes_memory(Op op) {
  switch (op) {
    case Op::Alloc: case Op::Free: case Op::ReleaseFailed: case Op::PoolCreate: case Op::PoolDestroy:
    case Op::PoolReserved: case Op::VmmCreate: case Op::VmmRelease: case Op::VmmMap: case Op::VmmUnmap:
      return true;
    default:
      return false;
  }
}

// The bridge's events that move a framework's allocated or reserved bytes.
bool changes_framework_memory(Op op) {
  switch (op) {
    case Op::TensorAlloc: case Op::TensorFreeCompleted: case Op::SegmentAlloc: case Op::SegmentFree:
    case Op::SegmentMap: case Op::SegmentUnmap: case Op::FrameworkAttach:
      return true;
    default:
      return false;
  }
}

// The allocated figure by kind: managed memory is not part of it (docs/accounting.md), so the kinds
// add up to the figure.
std::array<uint64_t, kKindCount> allocated_by_kind(const DeviceStats& d) {
  std::array<uint64_t, kKindCount> out{};
  for (size_t k = 0; k < out.size(); ++k) out[k] = d.by_kind[k].bytes.current;
  out[static_cast<size_t>(Kind::Managed)] = 0;
  return out;
}

// The reserved figure by kind: pools count what they reserved, VMM its physical handles, graphs the
// graph memory pool.
std::array<uint64_t, kKindCount> reserved_by_kind(const DeviceStats& d) {
  std::array<uint64_t, kKindCount> out = allocated_by_kind(d);
  out[static_cast<size_t>(Kind::Pool)] = d.pool_reserved.current;
  out[static_cast<size_t>(Kind::Vmm)] = d.vmm_physical.current;
  out[static_cast<size_t>(Kind::Graph)] = d.graph_reserved.current;
  return out;
}

void keep_marker(RunAnalysis& run, const Options& opt, const Marker& m) {
  if (run.markers.size() < opt.max_markers) {
    run.markers.push_back(m);
  } else {
    ++run.markers_dropped;
  }
}

// Markers come from the first pass: alerts, failed allocations and the OOM recorder's own events.
void collect_marker(RunAnalysis& run, const Options& opt, const Event& e) {
  Marker m{};
  m.at_ns = since(e.timestamp_ns, run.start_ns);
  m.device = e.device;
  switch (e.op) {
    case Op::Alert:
      m.type = e.result != 0 ? Marker::Type::AlertFired : Marker::Type::AlertCleared;
      m.alert = static_cast<AlertType>(e.value);
      m.size = e.size;
      m.reserved = e.object;
      m.threshold = e.address;
      break;
    case Op::Alloc:
      if (e.result == 0) return;
      m.type = Marker::Type::AllocFailed;
      m.size = e.size;
      m.result = e.result;
      m.api = e.api;
      break;
    case Op::OomBundle: m.type = Marker::Type::OomBundle; break;
    case Op::OomRecovered: m.type = Marker::Type::OomRecovered; break;
    case Op::Cleanup:
      m.type = Marker::Type::Cleanup;
      m.size = e.size;
      m.threshold = e.value;
      break;
    default: return;
  }
  keep_marker(run, opt, m);
}

std::map<int, std::string> device_names(const reader::RunDirectory& run) {
  std::map<int, std::string> names;
  for (const DeviceFigures& d : run.figures.devices) {
    if (d.stats.device >= 0 && !d.name.empty()) names[d.stats.device] = d.name;
  }
  return names;
}

// A trace that lacks events (a failed write, a file cut short) understates every total and peak
// its replay gives; summary.json's were counted from all of them. Its figures replace the replay's,
// while what was live when (which only the events can tell) stays the trace's, and the report says
// so (reader::event_count_warnings).
void take_summary_figures(RunAnalysis& run) {
  for (const DeviceFigures& f : run.run.figures.devices) {
    const DeviceStats& s = f.stats;
    if (s.device < 0) continue;
    DeviceAnalysis& d = run.devices[s.device];
    d.device = s.device;
    const DeviceStats::Telemetry nvml = d.final_stats.nvml;
    d.final_stats = s;
    d.final_stats.nvml = nvml;
    d.allocated_peak.bytes = s.allocated.peak;
    d.allocated_peak.at_ns = s.allocated_peak_ns;
    d.reserved_peak.bytes = s.reserved.peak;
    d.reserved_peak.at_ns = s.reserved_peak_ns;
  }
}

struct PeakWatch {
  PeakPoint allocated, reserved;
  uint64_t tensors = 0, tensors_index = 0;  // the framework's allocated peak and the event that set it
};

// A figure summed over the process's devices: the allocated bytes, and the tensors' (the
// framework's allocated), which ranges and marks are measured in.
template <typename Figure>
uint64_t process_total(const Accounting& acc, Figure figure) {
  uint64_t total = 0;
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal >= 0) total += figure(d);
  }
  return total;
}
uint64_t process_allocated(const Accounting& acc) {
  return process_total(acc, [](const DeviceStats& d) { return d.allocated.current; });
}
uint64_t process_tensors(const Accounting& acc) {
  return process_total(acc, [](const DeviceStats& d) { return d.framework.allocated.current; });
}

bool open_replay(reader::TraceReplay& replay, const std::string& trace_path, const Options& opt, std::string& error) {
  if (!replay.open(trace_path, error)) return false;
  replay.set_window(opt.window);
  replay.set_progress(opt.progress);
  if (opt.progress != nullptr) opt.progress->expect(replay.records_in_file());
  return true;
}

// Pass 1: final figures, the event index of each device's peaks, markers and NVML peaks.
bool first_pass(const std::string& trace_path, RunAnalysis& run, const Options& opt, std::map<int, PeakWatch>& peaks,
                uint64_t& last_ns, std::string& error) {
  reader::TraceReplay trace;
  if (!open_replay(trace, trace_path, opt, error)) return false;
  run.start_ns = trace.start_ns();
  const Accounting& acc = trace.accounting();
  AttributionReplay regions(run.attribution, run.start_ns, opt.max_marks, opt.max_pauses);
  if (!trace.begin_window()) {
    error = trace.error();
    return false;
  }
  // A trace whose oldest segments were deleted is a window from its first kept event on.
  run.window = trace.window();
  // A window's peaks start at the state where it starts (the last event before it).
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal < 0) continue;
    PeakWatch& w = peaks[ordinal];
    const uint64_t at = run.window.since_ns;
    w.allocated = {d.allocated.current, at, trace.index(), allocated_by_kind(d)};
    w.reserved = {d.reserved.current, at, trace.index(), reserved_by_kind(d)};
    w.tensors = d.framework.allocated.current;
    w.tensors_index = trace.index();
  }
  uint64_t allocated = process_allocated(acc), tensors = process_tensors(acc);
  bool framework = false;  // tensors were recorded: ranges and marks get their figures too
  const auto holds_memory = [&acc] {
    for (const auto& [ordinal, d] : acc.devices()) {
      if (ordinal >= 0 && (d.allocated.current > 0 || d.reserved.current > 0)) return true;
    }
    return false;
  };
  std::optional<uint64_t> first_memory_ns;  // none while no device held memory
  if (holds_memory()) first_memory_ns = run.window.since_ns;
  while (trace.next()) {
    const Event& e = trace.event();
    const uint64_t index = trace.index();
    if (!first_memory_ns && changes_memory(e.op) && holds_memory()) {
      first_memory_ns = since(e.timestamp_ns, run.start_ns);
    }
    collect_marker(run, opt, e);
    if (e.stack_id != 0) ++run.stack_events;
    if (changes_memory(e.op)) allocated = process_allocated(acc);
    if (changes_framework_memory(e.op)) tensors = process_tensors(acc);
    framework = framework || e.op == Op::TensorAlloc;
    regions.apply(e, allocated, tensors);
    if (e.op == Op::Sample && e.device >= 0) {
      DeviceAnalysis& d = run.devices[e.device];
      d.nvml_device_used_peak = std::max(d.nvml_device_used_peak, e.size);
      if (e.value != UINT64_MAX) d.nvml_process_peak = std::max(d.nvml_process_peak, e.value);
    }
    if (e.op == Op::DeviceLimit && e.device >= 0) {
      DeviceLimitFigures& l = run.devices[e.device].limit;
      l.limit = e.value;
      l.context = e.size;
      const uint64_t need = e.object + e.address;
      if (e.result == kOutOfMemory && l.refusals++ == 0) l.first_excess = need > e.value ? need - e.value : 0;
      if (auto d = acc.devices().find(e.device); d != acc.devices().end()) note_limit_peak(l, d->second);
    }
    if (e.op == Op::TensorAlloc && e.device >= 0) {
      PeakWatch& w = peaks[e.device];
      const uint64_t tensors = acc.devices().at(e.device).framework.allocated.current;
      if (tensors > w.tensors) {
        w.tensors = tensors;
        w.tensors_index = index;
      }
    } else if (e.op == Op::FrameworkAttach && e.result != 1) {
      for (auto& [_, w] : peaks) w.tensors = w.tensors_index = 0;  // detached: what came before is void
    }
    if (!changes_memory(e.op)) continue;
    // A pool or VMM event can change a device other than its own; there are few devices.
    for (const auto& [ordinal, d] : acc.devices()) {
      if (ordinal < 0) continue;
      PeakWatch& w = peaks[ordinal];
      if (d.allocated.current > w.allocated.bytes) {
        w.allocated = {d.allocated.current, since(e.timestamp_ns, run.start_ns), index, allocated_by_kind(d)};
      }
      if (d.reserved.current > w.reserved.bytes) {
        w.reserved = {d.reserved.current, since(e.timestamp_ns, run.start_ns), index, reserved_by_kind(d)};
      }
      if (auto l = run.devices.find(ordinal); l != run.devices.end()) note_limit_peak(l->second.limit, d);
    }
  }
  if (trace.failed()) {
    error = trace.error();
    return false;
  }
  run.events = trace.index();
  run.truncated_bytes = trace.truncated_bytes();
  last_ns = acc.last_timestamp_ns();
  run.host_pinned = acc.host_pinned();
  run.regions = regions.finish(last_ns);
  run.regions.tensors = framework;
  run.duration_ns = since(last_ns, run.start_ns);
  run.timeline_from_ns = first_memory_ns.value_or(run.window.since_ns);
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal < 0) continue;
    DeviceAnalysis& out = run.devices[ordinal];
    out.device = ordinal;
    out.final_stats = d;
  }
  for (const LiveAllocation& a : acc.live_outside_framework()) run.leaks.add(a, opt.largest);
  for (const LiveAllocation& a : acc.live_allocations()) {
    if (a.kind == Kind::HostPinned) run.pinned_at_exit.add(a, opt.largest);
  }
  for (const LiveAllocation& a : acc.live_tensors()) run.tensor_leaks.add(a, opt.largest);
  run.leaks.finish(opt.largest);
  run.pinned_at_exit.finish(opt.largest);
  run.tensor_leaks.finish(opt.largest);
  return true;
}

class Timeline {
 public:
  // From where memory was first held in the window (RunAnalysis::timeline_from_ns) to its last event.
  // `fine_slices`: FineTimeline's cap, from 1 ns slices up.
  Timeline(RunAnalysis& run, size_t buckets, size_t fine_slices)
      : run_(run), buckets_(std::max<size_t>(buckets, 1)), origin_(run.timeline_from_ns), end_index_(buckets_) {
    width_ = std::max<uint64_t>(1, (run.duration_ns > origin_ ? run.duration_ns - origin_ : 0) / buckets_ + 1);
    for (auto& [ordinal, d] : run.devices) {
      d.fine = FineTimeline(origin_, 1, fine_slices);
      d.timeline.assign(buckets_, TimelineBucket{});
      for (size_t i = 0; i < buckets_; ++i) d.timeline[i].start_ns = origin_ + i * width_;
      touched_[ordinal].assign(buckets_, false);
    }
  }

  // After the event at trace position `index` (the window's start: the position before its first).
  void memory(const Accounting& acc, uint64_t at_ns, uint64_t index) {
    const size_t b = bucket(at_ns);
    end_index_[b] = index;
    for (const auto& [ordinal, d] : acc.devices()) {
      auto it = run_.devices.find(ordinal);
      if (it == run_.devices.end()) continue;
      TimelineBucket& t = it->second.timeline[b];
      std::vector<bool>& seen = touched_[ordinal];
      Level& before = level_[ordinal];
      if (!seen[b]) {  // the bucket's extremes include the level it was entered at
        seen[b] = true;
        t.allocated_max = t.allocated_min = before.allocated;
        t.reserved_max = t.reserved_min = before.reserved;
        t.allocated_max_index = before.index;
        t.tensors_max = before.tensors;
        t.framework_reserved_max = before.framework_reserved;
      }
      const FrameworkStats& f = d.framework;
      const Level after{d.allocated.current, d.reserved.current, f.allocated.current, f.reserved.current, index};
      it->second.fine.level(at_ns, before.levels(), after.levels());
      before = after;
      if (d.allocated.current > t.allocated_max) {
        t.allocated_max = d.allocated.current;
        t.allocated_max_index = index;
      }
      t.reserved_max = std::max(t.reserved_max, d.reserved.current);
      t.allocated_min = std::min(t.allocated_min, d.allocated.current);
      t.reserved_min = std::min(t.reserved_min, d.reserved.current);
      t.allocated_last = d.allocated.current;
      t.reserved_last = d.reserved.current;
      t.tensors_max = std::max(t.tensors_max, f.allocated.current);
      t.framework_reserved_max = std::max(t.framework_reserved_max, f.reserved.current);
      t.tensors_last = f.allocated.current;
      t.framework_reserved_last = f.reserved.current;
    }
  }

  void sample(int device, uint64_t at_ns, uint64_t process_bytes) {
    auto it = run_.devices.find(device);
    if (it == run_.devices.end() || process_bytes == UINT64_MAX) return;
    TimelineBucket& t = it->second.timeline[bucket(at_ns)];
    t.nvml_process_max = std::max(t.nvml_process_max, process_bytes);
    it->second.fine.sample(at_ns, level_[device].levels(), process_bytes);
  }

  // Buckets without an event hold the level the previous bucket ended at.
  void finish() {
    for (auto& [ordinal, d] : run_.devices) {
      const std::vector<bool>& seen = touched_[ordinal];
      TimelineBucket carry{};
      uint64_t carry_index = 0;
      for (size_t i = 0; i < buckets_; ++i) {
        TimelineBucket& t = d.timeline[i];
        if (!seen[i]) {
          t.allocated_max = t.allocated_min = t.allocated_last = carry.allocated_last;
          t.reserved_max = t.reserved_min = t.reserved_last = carry.reserved_last;
          t.allocated_max_index = carry_index;
          t.tensors_max = t.tensors_last = carry.tensors_last;
          t.framework_reserved_max = t.framework_reserved_last = carry.framework_reserved_last;
        }
        carry = t;
        if (seen[i]) carry_index = end_index_[i];
      }
    }
  }

 private:
  size_t bucket(uint64_t at_ns) const {
    return std::min<size_t>(buckets_ - 1, (at_ns > origin_ ? at_ns - origin_ : 0) / width_);
  }

  struct Level {
    uint64_t allocated = 0, reserved = 0, tensors = 0, framework_reserved = 0;
    uint64_t index = 0;  // the trace position it was set at
    Levels levels() const { return {allocated, reserved, tensors, framework_reserved}; }
  };
  RunAnalysis& run_;
  size_t buckets_;
  uint64_t origin_;
  std::map<int, Level> level_;
  uint64_t width_ = 1;
  std::map<int, std::vector<bool>> touched_;
  std::vector<uint64_t> end_index_;  // per bucket: the position of its last memory event
};

// The moment to list what was live on a device: its allocated peak, or its tensors' peak.
struct Snapshot {
  uint64_t event_index;
  int device;
  bool tensors;
  auto operator<=>(const Snapshot&) const = default;
};

// What was live adds up to the peak it explains: the allocated figure's own allocations (VMM by its
// mappings, no managed memory), or the tensors.
void take_snapshot(RunAnalysis& run, const Options& opt, const Accounting& acc, const Snapshot& at) {
  DeviceAnalysis& d = run.devices[at.device];
  collect_live(at.tensors ? d.tensors_at_peak : d.live_at_peak, acc, at.device, at.tensors, opt.largest);
}

// Pass 2: the timeline, and the live tables just after each device's allocated-peak event and,
// where the bridge attached, the event that set its tensors' peak.
bool second_pass(const std::string& trace_path, RunAnalysis& run, const Options& opt,
                 const std::map<int, PeakWatch>& peaks, std::string& error) {
  std::vector<Snapshot> snapshots;
  for (const auto& [ordinal, d] : run.devices) {
    if (d.allocated_peak.event_index != 0) snapshots.push_back({d.allocated_peak.event_index, ordinal, false});
    auto w = peaks.find(ordinal);
    if (d.framework.attached && w != peaks.end() && w->second.tensors_index != 0) {
      snapshots.push_back({w->second.tensors_index, ordinal, true});
    }
  }
  std::sort(snapshots.begin(), snapshots.end());
  reader::TraceReplay trace;
  if (!open_replay(trace, trace_path, opt, error)) return false;
  Timeline timeline(run, opt.timeline_buckets, opt.fine_slices);
  const Accounting& acc = trace.accounting();
  if (!trace.begin_window()) {
    error = trace.error();
    return false;
  }
  // A window's timeline starts at the level where it starts.
  if (!run.window.whole()) timeline.memory(acc, run.window.since_ns, trace.index());
  size_t next = 0;
  while (next < snapshots.size() && snapshots[next].event_index <= trace.index()) {  // at the window's start
    take_snapshot(run, opt, acc, snapshots[next++]);
  }
  while (trace.next()) {
    const Event& e = trace.event();
    const uint64_t index = trace.index();
    const uint64_t at = since(e.timestamp_ns, run.start_ns);
    if (changes_memory(e.op) || changes_framework_memory(e.op)) timeline.memory(acc, at, index);
    if (e.op == Op::Sample) timeline.sample(e.device, at, e.value);
    while (next < snapshots.size() && snapshots[next].event_index == index) {
      take_snapshot(run, opt, acc, snapshots[next++]);
    }
  }
  if (trace.failed()) {  // the first pass read the same bytes; only a changing file gets here
    error = trace.error();
    return false;
  }
  timeline.finish();
  return true;
}

// Names the stacks of every live set once (one addr2line per file for the whole report), then
// groups each set by call site and folds it into a flame graph.
void attribute(RunAnalysis& run, const Options& opt) {
  std::vector<uint32_t> ids;
  auto collect = [&ids](const LiveSet& set) {
    for (const auto& [id, _] : set.by_stack) {
      if (id != 0) ids.push_back(id);
    }
  };
  for (const auto& [_, d] : run.devices) {
    collect(d.live_at_peak);
    collect(d.tensors_at_peak);
  }
  collect(run.leaks);
  collect(run.tensor_leaks);
  const auto& graphs = run.run.figures.graphs;  // where each graph was captured (the report's first ones)
  for (size_t i = 0; i < graphs.size() && i < kGraphsShown; ++i) {
    if (graphs[i].stack_id != 0) ids.push_back(static_cast<uint32_t>(graphs[i].stack_id));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (opt.symbolize && !ids.empty()) {
    Symbolizer symbolizer(run.attribution, SymbolizerOptions{opt.source_lines});
    run.stacks = symbolizer.symbolize(ids);
  }
  for (auto& [ordinal, d] : run.devices) {
    d.sites_at_peak = group_by_site(d.live_at_peak.by_stack, run.stacks, opt.max_sites);
    d.flame = build_flame("GPU " + std::to_string(ordinal), d.live_at_peak.by_stack, run.stacks);
    d.tensor_sites_at_peak = group_by_site(d.tensors_at_peak.by_stack, run.stacks, opt.max_sites);
  }
  run.leak_sites = group_by_site(run.leaks.by_stack, run.stacks, opt.max_sites);
  run.tensor_leak_sites = group_by_site(run.tensor_leaks.by_stack, run.stacks, opt.max_sites);
}

}  // namespace

namespace {
bool bigger(const LiveAllocation& a, const LiveAllocation& b) {
  return a.size != b.size ? a.size > b.size : a.timestamp_ns < b.timestamp_ns;
}
}  // namespace

void LiveSet::add(const LiveAllocation& a, size_t keep_largest) {
  total.add(a.size);
  by_kind[static_cast<size_t>(a.kind)].add(a.size);
  by_stack[a.stack_id].add(a.size);
  if (floor_ && !bigger(a, *floor_)) return;
  largest.push_back(a);
  // Trim now and then so the candidates stay a small multiple of what is kept.
  if (largest.size() >= 4 * keep_largest + 64) finish(keep_largest);
}

void LiveSet::finish(size_t keep_largest) {
  if (largest.size() > keep_largest) {
    std::nth_element(largest.begin(), largest.begin() + keep_largest, largest.end(), bigger);
    largest.resize(keep_largest);
  }
  std::sort(largest.begin(), largest.end(), bigger);
  if (keep_largest > 0 && largest.size() == keep_largest) floor_ = largest.back();
}

void collect_live(LiveSet& set, const Accounting& acc, int device, bool tensors, size_t largest) {
  for (const LiveAllocation& a : tensors ? acc.live_tensors() : acc.live_allocated(device)) {
    if (a.device == device && a.kind != Kind::HostPinned) set.add(a, largest);
  }
  set.finish(largest);
}

const Summary::Framework* attached_framework(const RunAnalysis& run) {
  const auto& f = run.run.figures.framework;
  return f && f->state == "attached" ? &*f : nullptr;
}

std::optional<RunAnalysis> analyze_run(const std::string& dir, const Options& options, std::string& error) {
  auto opened = reader::open_run_directory(dir, error, options.progress);
  if (!opened) return std::nullopt;
  RunAnalysis run;
  run.run = std::move(*opened);
  run.window = options.window;
  run.attribution = reader::read_attribution(dir + "/" + kAttributionFile);
  if (!run.attribution.error.empty()) {
    error = run.attribution.error;
    return std::nullopt;
  }
  const std::string& trace_path = dir;  // its segments (reader/trace_reader.h)
  std::map<int, PeakWatch> peaks;
  uint64_t last_ns = 0;
  if (!first_pass(trace_path, run, options, peaks, last_ns, error)) return std::nullopt;
  const auto names = device_names(run.run);
  for (auto it = run.devices.begin(); it != run.devices.end();) {
    // A sample for a device the process never allocated on says nothing about this run.
    if (it->second.final_stats.alloc_count == 0 && peaks[it->first].reserved.bytes == 0 &&
        it->second.final_stats.total_bytes == 0) {
      it = run.devices.erase(it);
      continue;
    }
    it->second.device = it->first;
    it->second.allocated_peak = peaks[it->first].allocated;
    it->second.reserved_peak = peaks[it->first].reserved;
    ++it;
  }
  // summary.json's figures are the whole run's: a window's are the replay's own.
  if (run.window.whole() && run.run.events.trace_incomplete()) take_summary_figures(run);
  if (run.window.whole()) {
    // The framework level as summary.json (or the summary rebuilt from the trace) has it.
    for (const DeviceFigures& f : run.run.figures.devices) {
      auto it = run.devices.find(f.stats.device);
      if (it != run.devices.end() && f.stats.framework.attached) it->second.framework = f.stats.framework;
    }
  } else {
    for (auto& [_, d] : run.devices) {
      FrameworkStats& f = d.framework = d.final_stats.framework;
      for (uint64_t* t : {&f.allocated_peak_ns, &f.reserved_peak_ns, &f.outside_peak_ns}) *t = since(*t, run.start_ns);
    }
  }
  for (auto& [ordinal, d] : run.devices) {
    auto name = names.find(ordinal);
    if (name != names.end()) d.name = name->second;
  }
  if (!second_pass(trace_path, run, options, peaks, error)) return std::nullopt;
  attribute(run, options);
  return run;
}

}  // namespace gmp::analysis
