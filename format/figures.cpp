#include "figures.h"

namespace gmp {

void FrameworkStats::reset_peaks(uint64_t at_ns) {
  for (Counter* c : {&allocated, &reserved, &pending_free, &outside}) c->reset_peak();
  for (auto& [_, p] : private_pools) {
    p.reserved.reset_peak();
    p.allocated.reset_peak();
  }
  allocated_peak_ns = reserved_peak_ns = outside_peak_ns = at_ns;
}

uint64_t GraphStats::bytes_per_launch() const {
  uint64_t n = 0;
  for (const Node& a : allocs) n += a.size;
  return n;
}

bool GraphStats::frees_inside(uint64_t address) const {
  return std::find(frees.begin(), frees.end(), address) != frees.end();
}

uint64_t GraphStats::outliving_bytes() const {
  uint64_t n = 0;
  for (const Node& a : allocs) {
    if (!frees_inside(a.address)) n += a.size;
  }
  return n;
}

}  // namespace gmp
