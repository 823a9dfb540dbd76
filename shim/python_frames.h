// Python source locations of the calling thread, read through CPython's C API (3.10 to 3.13)
// without running Python code: only when this thread already holds the GIL, never taking it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gmp::shim {

// Appends up to `max` Python frames, innermost first, as intern ids of (file, function, line)
// records with kPythonFrameTag set; returns how many. 0 outside CPython or without the GIL.
size_t capture_python_frames(uint64_t* out, size_t max);

// Marks a frame entry as a Python frame id rather than a return address (user-space addresses
// never have the top bit set).
inline constexpr uint64_t kPythonFrameTag = 1ull << 63;

}  // namespace gmp::shim
