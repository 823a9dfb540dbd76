// Marks, ranges and pause/resume (docs/attribution.md), from the C API in include/gpumemprof.h
// and from NVTX. A thread's open ranges are also kept here, so ranges opened before the session
// started (before the first CUDA call) are replayed into the trace when that thread first records;
// marks made then are kept too and replayed, in order, when the session first records.
#pragma once

#include <cstdint>

#include "event.h"

namespace gmp::shim {

void record_mark(Api source, const char* name);
void record_range_push(Api source, const char* name);
void record_range_pop(Api source);
void set_paused(Api source, bool paused);

// Before an allocation-type event (Alloc, VmmCreate, VmmMap): false while recording is paused.
// Otherwise replays the thread's ranges if the session has not seen them, and sets *stack to the
// thread's call stack id (0 when stacks are off).
bool prepare_allocation_event(uint32_t* stack);
// The same for a framework's allocation (a tensor, a segment): its stack is the Python frames only,
// or native and Python frames with GPUMEMPROF_TENSOR_STACKS=all.
bool prepare_framework_event(uint32_t* stack);

}  // namespace gmp::shim
