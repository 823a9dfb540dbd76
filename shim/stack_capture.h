// Preparing an allocation's event, on the allocating thread before its event is claimed: the
// thread's marks and ranges caught up (markers.h), then its call stack captured and interned
// (native return addresses, then Python frames when the thread runs CPython: python_frames.h),
// symbolised later by the tools (docs/attribution.md).
#pragma once

#include <cstdint>

namespace gmp::shim {

// Before an allocation-type event (Alloc, VmmCreate, VmmMap): false while recording is paused.
// Otherwise replays the thread's ranges if the session has not seen them, and sets *stack to the
// thread's call stack id (0 when stacks are off).
bool prepare_allocation_event(uint32_t* stack);
// The same for a framework's allocation (a tensor, a segment): its stack is the Python frames only,
// or native and Python frames with GPUMEMPROF_TENSOR_STACKS=all.
bool prepare_framework_event(uint32_t* stack);

}  // namespace gmp::shim
