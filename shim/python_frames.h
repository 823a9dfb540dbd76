// Python source locations of the calling thread (CPython 3.10 to 3.13), read straight from the
// interpreter's frame structs: no Python code runs, no GIL is taken, and none needs to be held.
// That matters because frameworks release the GIL around the native work that allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack_frame.h"  // kPythonFrameTag

namespace gmp::shim {

// A Python frame of this thread as the walk finds it: which frame, running which code object, at
// which instruction (the frame's instruction field as stored). The frame holds a reference to its
// code, so while it runs, equal values are the same source line.
struct PythonFrameRef {
  const char* frame;
  const char* code;
  uint64_t instr;
};

// Told once the walk has its first `after` frames (or all it will find, if fewer), so the caller
// can start fetching what it will look up with them while the walk goes on.
struct WalkHint {
  size_t after;
  void (*walked)(const PythonFrameRef* frames, size_t n, void* arg);
  void* arg;
};

// Up to `max` Python frames of this thread, innermost first (the interpreter's own entry frames
// left out); returns how many. 0 outside CPython, on a version without a known layout, or on a
// thread that has no Python frames. Reads the frames only, never the code objects.
size_t walk_python_frames(PythonFrameRef* out, size_t max, const WalkHint* hint);

// The walked frames as intern ids of (file, function, line) records with kPythonFrameTag set,
// innermost first; returns how many (a frame whose code is not a code object has none).
size_t python_frame_ids(const PythonFrameRef* frames, size_t n, uint64_t* out);

// Both: up to `max` Python frames of this thread as frame ids.
size_t capture_python_frames(uint64_t* out, size_t max);

}  // namespace gmp::shim
