#include "timeline_sets.h"

#include <algorithm>

#include "attribution_replay.h"

namespace gmp::analysis {
namespace {

BucketSet summarize(const LiveSet& live, size_t max_stacks) {
  BucketSet s{live.total, live.by_kind, {}, {}, live.largest};
  s.stacks.assign(live.by_stack.begin(), live.by_stack.end());
  auto more = [](const auto& a, const auto& b) {
    return a.second.bytes != b.second.bytes ? a.second.bytes > b.second.bytes : a.first < b.first;
  };
  std::sort(s.stacks.begin(), s.stacks.end(), more);
  for (size_t i = max_stacks; i < s.stacks.size(); ++i) {
    s.other_stacks.bytes += s.stacks[i].second.bytes;
    s.other_stacks.count += s.stacks[i].second.count;
  }
  if (s.stacks.size() > max_stacks) s.stacks.resize(max_stacks);
  return s;
}

// Range calls into bands: per thread and depth, the band a short call may extend.
class Bands {
 public:
  Bands(TimelineSets& out, uint64_t bucket_ns, size_t max_bands)
      : out_(out), bucket_ns_(std::max<uint64_t>(bucket_ns, 1)), max_(max_bands) {}

  void add(const RangeCall& c) {
    auto [name, added] = names_.try_emplace(std::string(c.name), out_.range_names.size());
    if (added) out_.range_names.emplace_back(c.name);
    const uint64_t width = c.exit_ns - std::min(c.exit_ns, c.entry_ns);
    auto last = lane_.find({c.thread, c.depth});
    if (last != lane_.end() && width < bucket_ns_) {
      RangeBand& b = out_.bands[last->second];
      if (b.name == name->second && c.entry_ns >= b.to_ns && c.entry_ns - b.to_ns < bucket_ns_) {
        b.to_ns = c.exit_ns;
        ++b.calls;
        b.open_at_end = c.open_at_end;
        return;
      }
    }
    if (out_.bands.size() >= max_) {
      ++out_.bands_dropped;
      return;
    }
    lane_[{c.thread, c.depth}] = out_.bands.size();
    out_.bands.push_back({name->second, c.thread, c.depth, c.entry_ns, c.exit_ns, 1, c.open_at_end});
  }

  void finish() {
    std::stable_sort(out_.bands.begin(), out_.bands.end(),
                     [](const RangeBand& a, const RangeBand& b) { return a.from_ns < b.from_ns; });
  }

 private:
  TimelineSets& out_;
  uint64_t bucket_ns_;
  size_t max_;
  std::map<std::string, size_t> names_;
  std::map<std::pair<uint32_t, size_t>, size_t> lane_;
};

}  // namespace

std::optional<TimelineSets> timeline_sets(const RunAnalysis& run, const Options& options, const SetsOptions& sets,
                                          std::string& error) {
  TimelineSets out;
  // The positions to stop at, each with the devices whose bucket maxima stood there.
  std::map<uint64_t, std::vector<int>> positions;
  std::map<int, std::map<uint64_t, size_t>> set_at;  // per device: position -> set
  uint64_t bucket_ns = 1;
  for (const auto& [ordinal, d] : run.devices) {
    DeviceSets& ds = out.devices[ordinal];
    for (const TimelineBucket& b : d.timeline) {
      auto [it, added] = set_at[ordinal].try_emplace(b.allocated_max_index, set_at[ordinal].size());
      ds.of_bucket.push_back(it->second);
      if (added) positions[b.allocated_max_index].push_back(ordinal);
    }
    ds.sets.resize(set_at[ordinal].size());
    if (d.timeline.size() > 1) bucket_ns = d.timeline[1].start_ns - d.timeline[0].start_ns;
  }
  const auto take = [&](const Accounting& acc, uint64_t position) {
    for (int device : positions[position]) {
      LiveSet live;
      collect_live(live, acc, device, false, options.largest);
      out.devices[device].sets[set_at[device][position]] = summarize(live, sets.stacks);
    }
  };

  reader::TraceReplay trace;
  if (!trace.open(run.run.path, error)) return std::nullopt;
  trace.set_window(options.window);
  trace.set_progress(options.progress);
  if (options.progress != nullptr) options.progress->expect(trace.records_in_file());
  if (!trace.begin_window()) {
    error = trace.error();
    return std::nullopt;
  }
  Bands bands(out, bucket_ns, sets.max_bands);
  AttributionReplay regions(run.attribution, run.start_ns);
  regions.on_range = [&bands](const RangeCall& c) { bands.add(c); };
  auto next = positions.begin();
  for (; next != positions.end() && next->first <= trace.index(); ++next) take(trace.accounting(), next->first);
  while (trace.next()) {
    regions.apply(trace.event(), 0);  // only its calls are used here, not its byte figures
    if (next != positions.end() && next->first == trace.index()) take(trace.accounting(), (next++)->first);
  }
  if (trace.failed()) {
    error = trace.error();
    return std::nullopt;
  }
  regions.finish(trace.accounting().last_timestamp_ns());
  bands.finish();

  std::vector<uint32_t> unnamed;
  for (const auto& [_, ds] : out.devices) {
    for (const BucketSet& s : ds.sets) {
      for (const auto& [id, b] : s.stacks) {
        if (id == 0 || out.stacks.count(id)) continue;
        if (auto it = run.stacks.find(id); it != run.stacks.end()) out.stacks.emplace(id, it->second);
        else unnamed.push_back(id);
      }
    }
  }
  std::sort(unnamed.begin(), unnamed.end());
  unnamed.erase(std::unique(unnamed.begin(), unnamed.end()), unnamed.end());
  if (options.symbolize && !unnamed.empty()) {
    Symbolizer symbolizer(run.attribution, SymbolizerOptions{options.source_lines});
    out.stacks.merge(symbolizer.symbolize(unnamed));
  }
  return out;
}

}  // namespace gmp::analysis
