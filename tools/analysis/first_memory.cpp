#include "first_memory.h"

namespace gmp::analysis {
namespace {

bool holds_memory(const Accounting& acc) {
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal >= 0 && (d.allocated.current > 0 || d.reserved.current > 0)) return true;
  }
  return false;
}

}  // namespace

void FirstMemory::start(const Accounting& acc, uint64_t at_ns) {
  if (holds_memory(acc)) at_ns_ = at_ns;
}

void FirstMemory::add(const ReplayStep& step) {
  if (!at_ns_ && changes_memory(step.event.op) && holds_memory(step.acc)) at_ns_ = step.at_ns;
}

}  // namespace gmp::analysis
