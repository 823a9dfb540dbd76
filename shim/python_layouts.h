// Where CPython 3.10 to 3.13 keep a thread's Python frames: byte offsets into the interpreter's
// own structs (x86_64/aarch64 LP64, default build). The frame reader (python_frames.cpp) walks
// them directly because the allocating thread usually runs without the GIL (PyTorch releases it
// inside every operator), when no C-API call is allowed. Each number is checked against the
// real headers by tests/python_layout/check_python_layout.cpp (this machine's Pythons) and by
// scripts/gpu_check.py (the GPU machine's); docs/attribution.md says where they come from.
#pragma once

#include <cstdint>

namespace gmp::shim {

struct PythonLayout {
  int minor;  // 3.minor
  // PyThreadState -> innermost frame. 3.10: `frame`; 3.11/3.12: `cframe`, then `current_frame`
  // inside _PyCFrame; 3.13: `current_frame`.
  uint16_t thread_frame;
  int16_t cframe_current;  // -1: thread_frame already points at the frame
  // Frames: PyFrameObject in 3.10, _PyInterpreterFrame after.
  uint16_t frame_code;      // f_code, f_executable in 3.13
  uint16_t frame_previous;  // f_back in 3.10
  uint16_t frame_instr;     // 3.10: int f_lasti (code units); after: pointer to the current code unit
  int16_t frame_owner;      // char owner; -1 in 3.10
  int8_t owner_cstack;      // owner value of the interpreter's own entry frames, skipped; -1 if none
  // PyCodeObject.
  uint16_t code_filename;
  uint16_t code_name;  // co_qualname where it exists (3.11+), else co_name
  uint16_t code_units;  // 3.11+: co_code_adaptive, the instructions themselves; 0 in 3.10
  // PyASCIIObject / PyCompactUnicodeObject sizes: where a compact string's characters start.
  uint16_t ascii_size;
  uint16_t compact_size;
};

inline constexpr PythonLayout kPythonLayouts[] = {
    // minor thread cframe code  prev  instr owner cstack file name units ascii compact
    {10, 24, -1, 32, 24, 96, -1, -1, 104, 112, 0, 48, 72},
    {11, 56, 8, 32, 48, 56, 69, -1, 112, 128, 184, 48, 72},
    {12, 56, 0, 0, 8, 56, 70, 3, 112, 128, 192, 40, 56},
    {13, 72, -1, 0, 8, 56, 70, 3, 112, 128, 200, 40, 56},
};

// The same in 3.10 to 3.13: PyThreadState's interpreter, every PyObject's header and a string's
// state word.
inline constexpr uint16_t kThreadInterp = 16;   // PyThreadState.interp
inline constexpr uint16_t kObjectType = 8;      // ob_type
inline constexpr uint16_t kVarObjectSize = 16;  // ob_size: a code object's length in code units
inline constexpr uint16_t kUnicodeLength = 16;  // PyASCIIObject.length, in characters
inline constexpr uint16_t kUnicodeState = 32;   // bit field: interned:2 kind:3 compact:1 ascii:1

inline const PythonLayout* python_layout(int major, int minor) {
  if (major != 3) return nullptr;
  for (const PythonLayout& l : kPythonLayouts) {
    if (l.minor == minor) return &l;
  }
  return nullptr;
}

}  // namespace gmp::shim
