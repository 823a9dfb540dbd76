// Calling what may never return, at a moment when we must not wait forever: at exit, the driver
// may be locked by the very thread that is exiting (a signal handler that calls exit() on a thread
// it interrupted inside a driver call), and nothing else would ever unlock it.
#pragma once

#include <cstdint>

namespace gmp {

// Runs `fn` on a thread of its own, with every signal blocked, and waits at most `timeout_ms` for
// it: true when it returned in time. A call that overruns is left to itself: it may finish later,
// or wait until the process ends. False at once when no thread can be started.
bool call_bounded(void (*fn)(), uint64_t timeout_ms);

}  // namespace gmp
