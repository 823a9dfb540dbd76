// An array's footprint as its descriptor implies it, ignoring the runtime's padding and alignment:
// the fallback where the runtime does not say (CUDA and HIP number the formats alike).
#pragma once

#include <algorithm>
#include <cstdint>

namespace gmp::shim {

// Bytes per channel of a CUarray_format / hipArray_Format value.
inline uint64_t format_bytes(unsigned format) {
  switch (format) {
    case 0x02: case 0x09: case 0x10: return 2;  // (UNSIGNED_|SIGNED_)INT16, HALF
    case 0x03: case 0x0a: case 0x20: return 4;  // (UNSIGNED_|SIGNED_)INT32, FLOAT
    default: return 1;  // 8-bit and block/planar formats: the descriptor gives no better per-element size
  }
}

// Width × height × depth (0 counts as 1) × element bytes, summed over `levels` mip levels (0: one).
inline uint64_t descriptor_bytes(uint64_t width, uint64_t height, uint64_t depth, uint64_t element_bytes,
                                 unsigned levels = 1) {
  uint64_t total = 0;
  for (unsigned l = 0; l < (levels == 0 ? 1 : levels); ++l) {
    total += std::max<uint64_t>(width >> l, 1) * std::max<uint64_t>(height >> l, 1) *
             std::max<uint64_t>(depth >> l, 1) * element_bytes;
  }
  return total;
}

}  // namespace gmp::shim
