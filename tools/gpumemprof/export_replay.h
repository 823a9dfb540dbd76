// The trace replayed one event at a time through the collector's own accounting (the tools' one
// replay, reader::TraceReplay, with its window), so that every export states the same allocated and
// reserved figures as summary.json, and which figures each event changed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace_replay.h"

namespace gmp::tool::exporter {

// A device's figures at both levels: the driver's, and its framework allocator's when the bridge
// delivers it (docs/accounting.md §Two levels; zero and false otherwise).
struct Figures {
  uint64_t allocated = 0, reserved = 0;
  bool framework = false;
  uint64_t framework_allocated = 0, framework_reserved = 0;
  bool operator==(const Figures&) const = default;
  bool driver_differs(const Figures& o) const { return allocated != o.allocated || reserved != o.reserved; }
  bool framework_differs(const Figures& o) const {
    return framework_allocated != o.framework_allocated || framework_reserved != o.framework_reserved;
  }
};

class Replay {
 public:
  // False with a one-line `error` when the trace cannot be read.
  bool open(const std::string& trace_path, const reader::Window& window, reader::Progress* progress,
            std::string& error);

  // Applies the events before the window (reader::TraceReplay::begin_window); figures() are then
  // those at its start. False when the trace turned out unreadable.
  bool begin_window();
  // Reads the window's next event and applies it; false at the end of the window, or where the
  // trace turns out unreadable (failed(), with error()).
  bool next();
  bool failed() const { return trace_.failed(); }
  const std::string& error() const { return trace_.error(); }
  const Event& event() const { return trace_.event(); }
  const Accounting& accounting() const { return trace_.accounting(); }
  const TraceHeader& header() const { return trace_.header(); }
  const reader::Window& window() const { return trace_.window(); }
  uint64_t since_start(uint64_t ts) const { return trace_.since_start(ts); }

  // Devices whose figures (at either level) the last event changed (usually none or one; a VMM
  // unmap can span devices), with their figures before and after it.
  struct Change {
    int device;
    Figures before, after;
  };
  const std::vector<Change>& changes() const { return changes_; }
  bool pinned_changed() const { return pinned_changed_; }

  // The device whose figures describe the last event: its own device, or for a release (recorded
  // before the driver call, without a device) the device it released memory on; -1 when none.
  int accounted_device() const;
  Figures figures(int device) const;  // current; zero for a device not seen yet
  const std::map<int, Figures>& all_figures() const { return last_; }
  // The bytes of the allocation the last event made or released: its size, or for a release
  // recorded without one the fall in its device's allocated bytes (tensors': the framework's).
  // Events of no allocation (samples, pools, markers) return nothing.
  std::optional<uint64_t> allocation_size() const;

  uint64_t events_read() const { return events_; }  // the window's, so far
  uint64_t truncated_bytes() const { return trace_.truncated_bytes(); }
  const std::string& trace_path() const { return trace_.trace_path(); }  // the segment read last
  uint64_t records_in_file() const { return trace_.records_in_file(); }

 private:
  void take_figures();

  reader::TraceReplay trace_;
  std::map<int, Figures> last_;  // after the previous event
  std::vector<Change> changes_;
  uint64_t pinned_last_ = 0;
  bool pinned_changed_ = false;
  bool begun_ = false;
  uint64_t events_ = 0;
};

}  // namespace gmp::tool::exporter
