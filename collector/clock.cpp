#include "clock.h"

#include <cpuid.h>

namespace gmp {

bool g_event_clock_is_tsc = false;
bool g_event_clock_rdtscp = false;

bool invariant_tsc_available() {
  unsigned a, b, c, d;
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000007) return false;
  __cpuid(0x80000007, a, b, c, d);
  return (d & (1u << 8)) != 0;
}

bool rdtscp_available() {
  unsigned a, b, c, d;
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000001) return false;
  __cpuid(0x80000001, a, b, c, d);
  return (d & (1u << 27)) != 0;
}

namespace {

// A first rate from a short busy wait, good to about 0.1%, until refresh() has a longer baseline.
double initial_ns_per_tick(uint64_t tsc0, uint64_t ns0) {
  uint64_t ns1, tsc1;
  do {
    ns1 = now_ns();
    tsc1 = __rdtsc();
  } while (ns1 - ns0 < 200'000);
  return static_cast<double>(ns1 - ns0) / static_cast<double>(tsc1 - tsc0);
}

}  // namespace

TickConverter::TickConverter(bool tsc) : tsc_(tsc), tsc0_(tsc ? __rdtsc() : 0), ns0_(now_ns()) {
  if (tsc_) ns_per_tick_ = initial_ns_per_tick(tsc0_, ns0_);
}

void TickConverter::refresh() {
  if (!tsc_) return;
  const uint64_t ns = now_ns(), tsc = __rdtsc();
  if (ns - ns0_ >= 10'000'000) ns_per_tick_ = static_cast<double>(ns - ns0_) / static_cast<double>(tsc - tsc0_);
}

uint64_t TickConverter::to_ns(uint64_t ticks) const {
  if (!tsc_) return ticks;
  const double delta = static_cast<double>(static_cast<int64_t>(ticks - tsc0_)) * ns_per_tick_;
  return ns0_ + static_cast<uint64_t>(static_cast<int64_t>(delta));
}

}  // namespace gmp
