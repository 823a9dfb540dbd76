// The native watchdog (GPUMEMPROF_WATCHDOG=trim, docs/alerts.md): when a critical alert fires on a
// device, the collector trims that device's stream-ordered pools to what is in use, at most once
// per GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS, and records a cleanup event with the bytes given back.
#pragma once

#include <cstdint>
#include <vector>

#include "accounting.h"
#include "config.h"

namespace gmp {

// Trims one pool to its in-use size through the driver (the shim supplies it: the collector never
// resolves CUDA); false when the driver refused. The reserved bytes before and after, as the driver says.
using PoolTrimmer = bool (*)(uint64_t pool, uint64_t* reserved_before, uint64_t* reserved_after);
void set_pool_trimmer(PoolTrimmer trimmer);

class Watchdog {
 public:
  explicit Watchdog(const Config& config)
      : enabled_(config.watchdog_trim), interval_ns_(config.watchdog_min_interval_ms * 1'000'000ull) {}

  // A critical alert fired on `device` at `now_ns`: unless a trim ran less than the interval ago,
  // trims the device's pools and appends, at `now_ns`, a pool_reserved event for each pool that
  // shrank and the cleanup event.
  void on_critical(int device, uint64_t now_ns, const Accounting& acc, std::vector<Event>& out);

 private:
  bool enabled_;
  uint64_t interval_ns_;
  bool trimmed_ = false;
  uint64_t last_ns_ = 0;
};

}  // namespace gmp
