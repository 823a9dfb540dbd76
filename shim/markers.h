// Marks, ranges and pause/resume (docs/attribution.md), from the C API in include/gpumemprof.h
// and from NVTX. A thread's open ranges are also kept here, so ranges opened before the session
// started (before the first CUDA call) are replayed into the trace when that thread first records;
// marks made then are kept too and replayed, in order, when the session first records.
#pragma once

#include <cstdint>

#include "event.h"

namespace gmp {
class Session;
}

namespace gmp::shim {

void record_mark(Api source, const char* name);
void record_range_push(Api source, const char* name);
void record_range_pop(Api source);
void set_paused(Api source, bool paused);

// Before an allocation's event (stack_capture.h): false while recording is paused. Otherwise
// *session is the running session (started if need be; nullptr when profiling is off), which has
// then seen the marks made before it and the calling thread's open ranges.
bool catch_up(Session** session);

}  // namespace gmp::shim
