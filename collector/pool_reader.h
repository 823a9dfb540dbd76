// Stream-ordered pools' reserved bytes, read off the program's hot path (docs/accounting.md, Pool):
// on a collector pass at most every kPoolReadNs, through the shim's reader (the collector never
// calls CUDA itself), each pool whose figures changed becoming a pool_reserved event carrying the
// driver's high watermark, which keeps the reserved peak's value exact.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "event.h"
#include "seam.h"  // PoolReading, PoolReadFn (DriverHooks::read_pools), pool_reserved_event

namespace gmp {

class PoolReader {
 public:
  static constexpr uint64_t kPoolReadNs = 1'000'000;
  void set(PoolReadFn read) { read_ = read; }
  // No more reads: the process is exiting, and its runtime may be tearing pools and contexts down
  // (what is left to read is read once on the exiting thread, before that: session.cpp).
  void stop() { stopped_.store(true, std::memory_order_release); }
  // At most every kPoolReadNs: one pool_reserved event per pool the reader reports changed.
  void maybe_read(uint64_t now_ns, std::vector<Event>& out);

 private:
  PoolReadFn read_ = nullptr;
  std::atomic<bool> stopped_{false};
  uint64_t next_ns_ = 0;
  std::vector<PoolReading> buffer_;
};

}  // namespace gmp
