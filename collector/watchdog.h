// The native watchdog (GPUMEMPROF_WATCHDOG=trim, docs/alerts.md): when a critical alert fires on a
// device, the collector trims that device's stream-ordered pools to what is in use, at most once
// per GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS, and records a cleanup event with the bytes given back.
#pragma once

#include <cstdint>
#include <vector>

#include "accounting.h"
#include "config.h"
#include "seam.h"  // PoolTrimmer

namespace gmp {

// The process's trimmer: the shim's DriverHooks::trim_pool, handed over by the session (and a
// fake by the tests). Without one the watchdog trims nothing.
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
