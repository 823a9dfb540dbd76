// What the HTML report's timeline shows for a selected window (docs/html-report.md, "Exploring
// the timeline"): per timeline bucket, what was live on the device at the bucket's highest allocated
// point (TimelineBucket::allocated_max_index), so that the page finds a window's highest point
// among its buckets and shows that bucket's set, which adds up to that point's allocated figure;
// and every range call as a band under the chart.
//
// One more replay of the trace. Each set is a summary (totals, by kind, the stacks holding most, the
// largest allocations), and buckets that share a position share a set, so what this keeps grows
// with the buckets, never with the events; range bands are capped (SetsOptions::max_bands).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "run_analysis.h"

namespace gmp::analysis {

struct BucketSet {
  Bytes total;
  std::array<Bytes, kKindCount> by_kind{};
  std::vector<std::pair<uint32_t, Bytes>> stacks;  // by stack id, most bytes first, at most SetsOptions::stacks
  Bytes other_stacks;                              // the stacks beyond those
  std::vector<LiveAllocation> largest;             // biggest first, at most Options::largest
};

struct DeviceSets {
  std::vector<size_t> of_bucket;  // per timeline bucket: its set in `sets`
  std::vector<BucketSet> sets;
};

// Calls of one range name on one thread at one depth. Back-to-back calls shorter than a bucket
// (a training loop's steps) are one band that counts them: they would be narrower than a pixel.
struct RangeBand {
  size_t name = 0;  // in TimelineSets::range_names
  uint32_t thread = 0;
  size_t depth = 0;
  uint64_t from_ns = 0, to_ns = 0;  // since the profiler started
  uint64_t calls = 1;
  bool open_at_end = false;  // the last call was closed at the trace's end
};

struct TimelineSets {
  std::map<int, DeviceSets> devices;
  std::vector<std::string> range_names;
  std::vector<RangeBand> bands;  // by start
  uint64_t bands_dropped = 0;    // calls past SetsOptions::max_bands
  StackTable stacks;             // every stack the sets name, symbolised
};

struct SetsOptions {
  size_t stacks = 32;
  size_t max_bands = 20000;
};

// Replays `run`'s trace (analyze_run's, with its `options`); nullopt with a one-line `error` when it
// cannot be read again.
std::optional<TimelineSets> timeline_sets(const RunAnalysis& run, const Options& options, const SetsOptions& sets,
                                          std::string& error);

}  // namespace gmp::analysis
