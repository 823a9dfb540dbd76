#include "run_analysis.h"

#include <algorithm>

#include "exit_sets.h"
#include "figure_sources.h"
#include "first_memory.h"
#include "nvml_peaks.h"
#include "process_levels.h"
#include "replay_step.h"
#include "run_directory_files.h"
#include "tensor_peak_watch.h"
#include "records.h"

namespace gmp::analysis {
namespace {

bool open_replay(reader::TraceReplay& replay, const std::string& trace_path, const Options& opt, std::string& error) {
  if (!replay.open(trace_path, error)) return false;
  replay.set_window(opt.window);
  replay.set_progress(opt.progress);
  if (opt.progress != nullptr) opt.progress->expect(replay.records_in_file());
  return true;
}

// The first pass's aggregators, each answering one question of the one replay; every event goes
// to each of them, in the order of the trace.
struct FirstPass {
  PeakWatch peaks;
  TensorPeakWatch tensor_peaks;
  TensorCategories& categories;
  std::map<int, std::optional<Phase>> peak_phases;
  MarkerLog markers;
  NvmlPeaks nvml;
  DeviceLimitWatch limits;
  FirstMemory first_memory;
  ProcessLevels levels;
  AttributionReplay regions;
  uint64_t stack_events = 0;  // events that carried a stack id

  FirstPass(const RunAnalysis& run, const Options& opt, TensorCategories& categories)
      : categories(categories),
        markers(opt.max_markers), regions(run.attribution, run.start_ns, opt.max_marks, opt.max_pauses) {}

  // The state where the window starts: trace position `index`, `at_ns` since the profiler started.
  void start(const Accounting& acc, uint64_t at_ns, uint64_t index) {
    peaks.start(acc, at_ns, index);
    tensor_peaks.start(acc, index);
    categories.start(acc);
    first_memory.start(acc, at_ns);
    levels.start(acc);
  }

  void add(const ReplayStep& step) {
    peaks.add(step);
    tensor_peaks.add(step);
    categories.add(step.event, step.index);
    // The phase each device's tensors peaked in, as the peak moves (tensor_peak_watch.h).
    if (step.event.op == Op::TensorAlloc && tensor_peaks.of(step.event.device).event_index == step.index) {
      peak_phases[step.event.device] = categories.phase();
    }
    markers.add(step);
    nvml.add(step);
    limits.add(step);
    first_memory.add(step);
    levels.add(step);
    regions.apply(step.event, levels.allocated(), levels.tensors());
    if (step.event.stack_id != 0) ++stack_events;
  }
};

// The replay's figures into `run`, from the aggregators and the accounting where the window ends.
void take_replay_figures(RunAnalysis& run, const Options& opt, const Accounting& acc, FirstPass& pass) {
  const uint64_t last_ns = acc.last_timestamp_ns();
  run.host_pinned = acc.host_pinned();
  run.stack_events = pass.stack_events;
  run.regions = pass.regions.finish(last_ns);
  run.regions.tensors = pass.levels.tensors_recorded();
  run.duration_ns = since(last_ns, run.start_ns);
  run.timeline_from_ns = pass.first_memory.at_ns().value_or(run.window.since_ns);
  run.markers = pass.markers.markers();
  run.markers_dropped = pass.markers.dropped();
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal < 0) continue;
    const DevicePeaks p = pass.peaks.of(ordinal);
    // A device the process never allocated on (an NVML sample's, a device limit's) says nothing
    // about this run.
    if (d.alloc_count == 0 && p.reserved.bytes == 0 && d.total_bytes == 0) continue;
    DeviceAnalysis& out = run.devices[ordinal];
    out.device = ordinal;
    out.final_stats = d;
    out.allocated_peak = p.allocated;
    out.reserved_peak = p.reserved;
    if (auto n = pass.nvml.devices().find(ordinal); n != pass.nvml.devices().end()) {
      out.nvml_process_peak = n->second.process;
      out.nvml_device_used_peak = n->second.device_used;
    }
    if (auto l = pass.limits.devices().find(ordinal); l != pass.limits.devices().end()) out.limit = l->second;
  }
  pass.categories.finish();
  const std::vector<LiveAllocation> tensors = acc.live_tensors();
  for (auto& [ordinal, d] : run.devices) {
    if (!acc.devices().at(ordinal).framework.attached) continue;
    d.categories_at_exit = split_by_category(tensors, ordinal, pass.categories, run.attribution);
    d.categories_at_exit.phase = pass.categories.phase();
    d.tensor_peak_phase = pass.peak_phases[ordinal];
  }
  ExitSets exit = live_at_exit(acc, opt.largest);
  run.leaks = std::move(exit.leaks);
  run.tensor_leaks = std::move(exit.tensor_leaks);
  run.pinned_at_exit = std::move(exit.pinned_at_exit);
}

// Pass 1: the replay's figures (peaks and the positions that set them, markers, ranges and marks,
// NVML peaks, limits, what was live at the end). Keeps, for the second pass, where the tensors
// peaked.
bool first_pass(const std::string& trace_path, RunAnalysis& run, const Options& opt, TensorPeakWatch& tensor_peaks,
                TensorCategories& categories, std::string& error) {
  reader::TraceReplay trace;
  if (!open_replay(trace, trace_path, opt, error)) return false;
  run.start_ns = trace.start_ns();
  const Accounting& acc = trace.accounting();
  if (!trace.begin_window()) {
    error = trace.error();
    return false;
  }
  // A trace whose oldest segments were deleted is a window from its first kept event on.
  run.window = trace.window();
  FirstPass pass(run, opt, categories);
  pass.start(acc, run.window.since_ns, trace.index());
  while (trace.next()) {
    const Event& e = trace.event();
    pass.add(ReplayStep{e, trace.index(), since(e.timestamp_ns, run.start_ns), acc});
  }
  if (trace.failed()) {
    error = trace.error();
    return false;
  }
  run.events = trace.index();
  run.truncated_bytes = trace.truncated_bytes();
  take_replay_figures(run, opt, acc, pass);
  tensor_peaks = std::move(pass.tensor_peaks);
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
      end_categories_[ordinal].assign(buckets_, CategoryBytes{});
    }
  }

  // After the event at trace position `index` (the window's start: the position before its first).
  void memory(const Accounting& acc, const CategoryLevels& categories, uint64_t at_ns, uint64_t index) {
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
        t.categories = before.categories;
        t.framework_reserved_max = before.framework_reserved;
      }
      const FrameworkStats& f = d.framework;
      const Level after{d.allocated.current, d.reserved.current, f.allocated.current, f.reserved.current, index,
                        categories.current(ordinal)};
      it->second.fine.level(at_ns, before.levels(), after.levels());
      before = after;
      end_categories_[ordinal][b] = after.categories;
      if (d.allocated.current > t.allocated_max) {
        t.allocated_max = d.allocated.current;
        t.allocated_max_index = index;
      }
      t.reserved_max = std::max(t.reserved_max, d.reserved.current);
      t.allocated_min = std::min(t.allocated_min, d.allocated.current);
      t.reserved_min = std::min(t.reserved_min, d.reserved.current);
      t.allocated_last = d.allocated.current;
      t.reserved_last = d.reserved.current;
      if (f.allocated.current > t.tensors_max) {
        t.tensors_max = f.allocated.current;
        t.categories = after.categories;
      }
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
      CategoryBytes carry_categories{};
      for (size_t i = 0; i < buckets_; ++i) {
        TimelineBucket& t = d.timeline[i];
        if (!seen[i]) {
          t.allocated_max = t.allocated_min = t.allocated_last = carry.allocated_last;
          t.reserved_max = t.reserved_min = t.reserved_last = carry.reserved_last;
          t.allocated_max_index = carry_index;
          t.tensors_max = t.tensors_last = carry.tensors_last;
          t.categories = carry_categories;
          t.framework_reserved_max = t.framework_reserved_last = carry.framework_reserved_last;
        }
        carry = t;
        if (seen[i]) {
          carry_index = end_index_[i];
          carry_categories = end_categories_[ordinal][i];
        }
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
    CategoryBytes categories{};
    Levels levels() const { return {allocated, reserved, tensors, framework_reserved, categories}; }
  };
  RunAnalysis& run_;
  size_t buckets_;
  uint64_t origin_;
  std::map<int, Level> level_;
  uint64_t width_ = 1;
  std::map<int, std::vector<bool>> touched_;
  std::vector<uint64_t> end_index_;  // per bucket: the position of its last memory event
  std::map<int, std::vector<CategoryBytes>> end_categories_;  // per device and bucket: the categories it ended at
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
void take_snapshot(RunAnalysis& run, const Options& opt, const Accounting& acc, const TensorCategories& categories,
                   const Snapshot& at) {
  DeviceAnalysis& d = run.devices[at.device];
  collect_live(at.tensors ? d.tensors_at_peak : d.live_at_peak, acc, at.device, at.tensors, opt.largest);
  if (at.tensors) {
    d.categories_at_peak = split_by_category(acc.live_tensors(), at.device, categories, run.attribution);
    d.categories_at_peak.phase = d.tensor_peak_phase;
  }
}

// Pass 2: the timeline, and the live tables just after each device's allocated-peak event and,
// where the bridge attached, the event that set its tensors' peak.
bool second_pass(const std::string& trace_path, RunAnalysis& run, const Options& opt,
                 const TensorPeakWatch& tensor_peaks, const TensorCategories& categories, std::string& error) {
  std::vector<Snapshot> snapshots;
  for (const auto& [ordinal, d] : run.devices) {
    if (d.allocated_peak.event_index != 0) snapshots.push_back({d.allocated_peak.event_index, ordinal, false});
    const uint64_t tensors_index = tensor_peaks.of(ordinal).event_index;
    if (d.framework.attached && tensors_index != 0) snapshots.push_back({tensors_index, ordinal, true});
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
  CategoryLevels levels(categories);
  levels.start(acc);
  // A window's timeline starts at the level where it starts.
  if (!run.window.whole()) timeline.memory(acc, levels, run.window.since_ns, trace.index());
  size_t next = 0;
  while (next < snapshots.size() && snapshots[next].event_index <= trace.index()) {  // at the window's start
    take_snapshot(run, opt, acc, categories, snapshots[next++]);
  }
  while (trace.next()) {
    const Event& e = trace.event();
    const uint64_t index = trace.index();
    const uint64_t at = since(e.timestamp_ns, run.start_ns);
    levels.add(e);
    if (changes_memory(e.op) || changes_framework_memory(e.op)) timeline.memory(acc, levels, at, index);
    if (e.op == Op::Sample) timeline.sample(e.device, at, SampleRecord::from_event(e).process_used);
    while (next < snapshots.size() && snapshots[next].event_index == index) {
      take_snapshot(run, opt, acc, categories, snapshots[next++]);
    }
  }
  if (trace.failed()) {  // the first pass read the same bytes; only a changing file gets here
    error = trace.error();
    return false;
  }
  timeline.finish();
  for (auto& [ordinal, d] : run.devices) d.category_peaks = levels.peaks(ordinal);
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
    stack_ids(d.categories_at_peak, ids);
    stack_ids(d.categories_at_exit, ids);
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
    name_items(d.categories_at_peak, run.stacks, opt.largest);
    name_items(d.categories_at_exit, run.stacks, opt.largest);
  }
  run.leak_sites = group_by_site(run.leaks.by_stack, run.stacks, opt.max_sites);
  run.tensor_leak_sites = group_by_site(run.tensor_leaks.by_stack, run.stacks, opt.max_sites);
}

}  // namespace

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
  TensorPeakWatch tensor_peaks;
  TensorCategories categories = replay_categories(run.attribution);
  if (!first_pass(trace_path, run, options, tensor_peaks, categories, error)) return std::nullopt;
  take_figures(run, figure_sources(run.run, run.window));
  if (!second_pass(trace_path, run, options, tensor_peaks, categories, error)) return std::nullopt;
  attribute(run, options);
  return run;
}

}  // namespace gmp::analysis
