// Ranges, marks and pause/resume (trace ops 17-21, docs/attribution.md) replayed alongside the
// accounting: per range name the calls, time, bytes allocated inside and the peak above entry;
// per mark the checkpoint figures; the pause intervals. Streaming: memory grows with the distinct
// range names, the open ranges and a bounded number of kept marks and pauses, never with events.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attribution_reader.h"
#include "event.h"

namespace gmp::analysis {

// What a range's calls did at one level: the driver's allocated bytes (the accounting's, summed
// over devices: linear, pool, VMM mapped, arrays), or the framework's tensors (the bridge's
// allocated bytes, summed over devices). Sums over calls, except the peak, the largest over calls.
struct RangeFigures {
  uint64_t bytes_allocated = 0;   // by the pushing thread while open, nested ranges included
  uint64_t allocations = 0;       // the allocation events behind bytes_allocated
  uint64_t peak_above_entry = 0;  // max over a call of (the process's level - the level at its entry)
  int64_t net_change = 0;         // sum over calls of (level at exit - level at entry)
};

// One range name. Each push..pop on a thread is one call.
struct RangeRow {
  std::string name;
  uint64_t calls = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
  RangeFigures driver, tensors;  // tensors: all 0 unless the framework bridge recorded tensors
  uint64_t open_at_end = 0;      // calls still open at the trace's end, closed at its last event
};

// A mark's figures at one level (as RangeFigures).
struct MarkFigures {
  uint64_t allocated = 0;            // the process's level at the mark
  uint64_t peak_since_previous = 0;  // max since the previous mark (or the start), this one included
  uint64_t peak_so_far = 0;          // max since the start
  int64_t growth = 0;                // level - level at the previous mark (the start: 0 bytes)
};

struct MarkRow {
  std::string name;
  uint64_t index = 0;  // 1-based among all marks
  uint64_t at_ns = 0;  // since the profiler started
  uint32_t thread = 0;
  MarkFigures driver, tensors;  // largest growth: the driver level's
};

struct PauseRow {
  uint64_t at_ns = 0;
  uint64_t resumed_at_ns = 0;  // the trace's last event when never resumed
  bool resumed = false;
  uint64_t frees = 0;          // releases recorded while paused (they are still recorded)
  uint64_t allocations = 0;    // allocation events recorded while paused (NVTX-less callers: 0)
};

struct Regions {
  std::vector<RangeRow> ranges;  // in order of first push
  std::vector<MarkRow> marks;    // the first and last kept marks, in order
  uint64_t marks_total = 0;
  uint64_t marks_omitted = 0;    // between the first and last kept ones
  std::optional<MarkRow> largest_growth;  // over all marks, kept or not; none without growth
  std::vector<PauseRow> pauses;
  uint64_t pauses_dropped = 0;
  uint64_t unbalanced_pops = 0;  // pops on a thread with no open range: ignored
  uint64_t open_at_end = 0;      // ranges closed at the trace's end
  bool tensors = false;          // the framework bridge recorded tensors: their figures mean something
  bool any() const { return !ranges.empty() || marks_total > 0 || !pauses.empty() || pauses_dropped > 0; }
};

// One call of a range, when it closes: the HTML report's bands and the perfetto export's slices.
struct RangeCall {
  std::string_view name;
  uint32_t thread = 0;
  uint64_t entry_ns = 0, exit_ns = 0;  // since the profiler started
  size_t depth = 0;                    // ranges of its thread still open around it
  bool open_at_end = false;            // closed at the trace's last event
};

class AttributionReplay {
 public:
  // Told of each range call as it closes (innermost first) and of each mark, kept or not.
  std::function<void(const RangeCall&)> on_range;
  std::function<void(const MarkRow&)> on_mark;

  AttributionReplay(const reader::Attribution& names, uint64_t start_ns, size_t max_marks = 1000,
                    size_t max_pauses = 1000);

  // Call after the accounting applied `e`, with the process's allocated bytes after it, and its
  // tensors' (the framework's allocated bytes; 0 without the bridge).
  void apply(const Event& e, uint64_t allocated, uint64_t tensors = 0);
  // Closes what is still open at `last_ns` (the trace's last event) and returns the tables.
  Regions finish(uint64_t last_ns);

 private:
  // One level's running figures: its current value, the maxima ranges and marks need.
  class Level {
   public:
    void set(uint64_t now);
    uint64_t now() const { return now_; }
    uint64_t enter();                                  // a range opens: its stretch
    uint64_t leave(uint64_t stretch, uint64_t entry);  // it closes: the maximum since its entry
    MarkFigures mark();

   private:
    // The maximum per stretch between consecutive open-range entries, keyed by the entry's sequence
    // number: the maximum since an entry is the maximum of the stretches from it on, and only the
    // last stretch changes per event.
    std::map<uint64_t, uint64_t> stretches_;
    uint64_t next_stretch_ = 1;
    uint64_t now_ = 0, peak_ = 0, since_mark_max_ = 0, last_mark_ = 0;
  };
  // A range call still open, at each level.
  struct OpenLevel {
    uint64_t entry = 0, stretch = 0;
    uint64_t bytes = 0, allocations = 0;  // own and (once popped) nested ranges'
  };
  struct Open {
    size_t row;  // index into rows_
    uint64_t entry_ns;
    OpenLevel driver, tensors;
  };
  void push(const Event& e);
  void pop(uint32_t thread, uint64_t at_ns, bool at_end);
  void mark(const Event& e);
  std::string name_of(const Event& e) const;  // a Mark's or RangePush's name
  uint64_t since(uint64_t ts) const { return ts > start_ns_ ? ts - start_ns_ : 0; }

  const reader::Attribution& names_;
  uint64_t start_ns_;
  size_t max_marks_, max_pauses_;
  std::vector<RangeRow> rows_;
  std::unordered_map<std::string, size_t> row_of_;
  std::unordered_map<uint32_t, std::vector<Open>> open_;  // by thread, innermost last
  Level driver_, tensors_;
  // Marks.
  std::vector<MarkRow> head_;
  std::deque<MarkRow> tail_;
  uint64_t marks_ = 0, marks_omitted_ = 0;
  std::optional<MarkRow> largest_;
  // Pauses.
  std::vector<PauseRow> pauses_;
  std::optional<PauseRow> paused_;
  uint64_t pauses_dropped_ = 0;
  uint64_t unbalanced_ = 0, open_at_end_ = 0;
};

}  // namespace gmp::analysis
