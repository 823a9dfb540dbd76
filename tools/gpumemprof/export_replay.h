// The trace replayed one event at a time through the collector's own accounting, so that every
// export states the same allocated and reserved figures as summary.json. Memory stays bounded by
// the live allocations: events are read in blocks and never kept.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "accounting.h"
#include "trace_reader.h"

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
  // `path`: a run directory or a trace file (reader/trace_reader.h).
  bool open(const std::string& path, std::string& error);

  // Reads the next event and applies it; false at the end of the trace, or where it turns out
  // unreadable (failed(), with error()).
  bool next();
  bool failed() const { return trace_.failed(); }
  const std::string& error() const { return trace_.error(); }
  const Event& event() const { return event_; }
  const Accounting& accounting() const { return acc_; }
  const TraceHeader& header() const { return trace_.header(); }
  uint64_t start_ns() const { return trace_.header().start_monotonic_ns; }
  uint64_t since_start(uint64_t ts) const { return ts > start_ns() ? ts - start_ns() : 0; }

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

  uint64_t events_read() const { return trace_.events_read(); }
  const std::string& trace_path() const { return trace_.path(); }
  uint64_t truncated_bytes() const { return trace_.truncated_bytes(); }

 private:
  reader::TraceReader trace_;
  Accounting acc_;
  Event event_{};
  std::map<int, Figures> last_;  // after the previous event
  std::vector<Change> changes_;
  uint64_t pinned_last_ = 0;
  bool pinned_changed_ = false;
};

}  // namespace gmp::tool::exporter
