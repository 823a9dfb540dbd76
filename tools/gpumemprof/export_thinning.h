// Counter tracks at a resolution (docs/exports.md §Resolution): a 10^7-event run has 10^7 changes
// of its counters, more than any viewer draws. Time is cut into buckets of the resolution, from the
// window's start; of each track's points in a bucket only these are written: the first, the last,
// and for each value of the point the one with the bucket's highest and the one with its lowest
// value (the first to reach it), in their order. So the maximum and the minimum of every track are
// the exact ones (the summary's peak), each bucket ends at the exact level, and a track has at most
// 2 + 2 x values points per bucket. Resolution 0 writes every point at once.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>

namespace gmp::tool::exporter {

class Thinner {
 public:
  static constexpr size_t kMaxValues = 4;
  using Write = std::function<void(const std::string& text)>;

  // `origin_ns`: where the first bucket starts (the window's since), in the points' time.
  Thinner(uint64_t resolution_ns, uint64_t origin_ns, Write write)
      : resolution_(resolution_ns), origin_(origin_ns), write_(std::move(write)) {}

  // A point of track `track` at `t_ns`, its `values` (at most kMaxValues), written as `text`.
  void point(uint64_t track, uint64_t t_ns, std::span<const uint64_t> values, const std::string& text);
  // Writes what the open buckets hold; call at the end.
  void finish();

 private:
  struct Held {
    uint64_t seq = 0;
    std::string text;
  };
  struct Bucket {
    uint64_t index = 0;
    Held first, last;
    std::array<Held, kMaxValues> max, min;
    std::array<uint64_t, kMaxValues> max_v{}, min_v{};
    size_t values = 0;
  };
  void flush(Bucket& b);

  uint64_t resolution_, origin_;
  Write write_;
  uint64_t seq_ = 0;
  std::map<uint64_t, Bucket> open_;  // by track
};

}  // namespace gmp::tool::exporter
