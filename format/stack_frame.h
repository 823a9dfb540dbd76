// One frame of a recorded call stack. The shim stores a stack as 64-bit words, each a return
// address or, with kPythonFrameTag set, the intern id of a Python frame; attribution.jsonl spells
// them "0x55d0c0001234" and "py:7" (attribution_records.h). Free of JSON so the shim can use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace gmp {

// Marks a stack word as a Python frame id rather than a return address (user-space addresses
// never have the top bit set).
inline constexpr uint64_t kPythonFrameTag = 1ull << 63;

struct StackFrame {
  uint64_t value = 0;   // a return address, or a pyframe id when `python`
  bool python = false;

  // The frame a stack word of the shim's stands for.
  static StackFrame from_word(uint64_t word) {
    return (word & kPythonFrameTag) != 0 ? StackFrame{word & ~kPythonFrameTag, true} : StackFrame{word, false};
  }
  bool operator==(const StackFrame&) const = default;
};

// The frames of a stack as the shim stores it: `bytes` bytes of 64-bit words (a trailing partial
// word is not a frame).
inline std::vector<StackFrame> stack_frames(const uint8_t* words, size_t bytes) {
  std::vector<StackFrame> out(bytes / sizeof(uint64_t));
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t word = 0;
    std::memcpy(&word, words + i * sizeof word, sizeof word);
    out[i] = StackFrame::from_word(word);
  }
  return out;
}

}  // namespace gmp
