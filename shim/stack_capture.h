// The allocating thread's call stack as an intern id (docs/attribution.md): native return
// addresses, then Python frames when the thread runs CPython (python_frames.h). Captured in the
// thread that allocates, before its event is claimed; symbolised later by the tools.
#pragma once

#include <cstdint>

namespace gmp::shim {

// 0 when `depth` is 0, or when the stack could not be interned.
uint32_t capture_stack(uint32_t depth, bool python);
// Python frames only (up to `depth`): for a framework's tensor, whose native frames are all inside
// the framework, the Python lines are the call site. 0 outside CPython or when `depth` is 0.
uint32_t capture_python_stack(uint32_t depth);

}  // namespace gmp::shim
