// What the first pass's aggregators are handed for each event of the one replay (run_analysis.cpp):
// the event, its place in the trace and the accounting just after it. Each aggregator answers one
// question from these steps alone, so it can be fed by hand in a test, and none reads the trace.
#pragma once

#include <cstdint>

#include "accounting.h"
#include "event.h"

namespace gmp::analysis {

struct ReplayStep {
  const Event& event;
  uint64_t index = 0;     // the event's 1-based position in the trace (TraceReplay::index())
  uint64_t at_ns = 0;     // since the profiler started
  const Accounting& acc;  // with the event applied
};

// The events that move a device's allocated or reserved bytes. The peaks, the timeline and the
// process totals ranges are measured in must agree on them, so they ask here.
bool changes_memory(Op op);
// The bridge's events that move a framework's allocated or reserved bytes.
bool changes_framework_memory(Op op);

}  // namespace gmp::analysis
