// A byte total with the number of allocations in it: the unit of every "what was live" table.
#pragma once

#include <cstdint>

namespace gmp::analysis {

struct Bytes {
  uint64_t bytes = 0, count = 0;
  void add(uint64_t n) {
    bytes += n;
    ++count;
  }
};

}  // namespace gmp::analysis
