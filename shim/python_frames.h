// Python source locations of the calling thread (CPython 3.10 to 3.13), read straight from the
// interpreter's frame structs: no Python code runs, no GIL is taken, and none needs to be held.
// That matters because frameworks release the GIL around the native work that allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack_frame.h"  // kPythonFrameTag

namespace gmp::shim {

// Appends up to `max` Python frames of this thread, innermost first, as intern ids of
// (file, function, line) records with kPythonFrameTag set; returns how many. 0 outside CPython,
// on a version without a known layout, or on a thread that has no Python frames.
size_t capture_python_frames(uint64_t* out, size_t max);

}  // namespace gmp::shim
