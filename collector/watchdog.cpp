#include "watchdog.h"
#include "records.h"

#include <atomic>

namespace gmp {
namespace {

std::atomic<PoolTrimmer> g_trimmer{nullptr};

}  // namespace

void set_pool_trimmer(PoolTrimmer trimmer) { g_trimmer.store(trimmer, std::memory_order_release); }

void Watchdog::on_critical(int device, uint64_t now_ns, const Accounting& acc, std::vector<Event>& out) {
  const PoolTrimmer trim = g_trimmer.load(std::memory_order_acquire);
  if (!enabled_ || trim == nullptr || (trimmed_ && now_ns - last_ns_ < interval_ns_)) return;
  trimmed_ = true;
  last_ns_ = now_ns;
  Event cleanup{};
  cleanup.timestamp_ns = now_ns;
  CleanupRecord trimmed;
  cleanup.api = Api::Collector;
  cleanup.device = static_cast<int16_t>(device);
  for (const Accounting::PoolInfo& p : acc.pools()) {
    uint64_t before = 0, after = 0;
    if (p.device != device || !trim(p.handle, &before, &after)) continue;
    ++trimmed.pools_trimmed;
    if (after >= before) continue;
    trimmed.bytes_released += before - after;
    Event e{};
    e.timestamp_ns = now_ns;
    PoolReservedRecord{p.handle, after, 0}.to_event(e);
    e.api = Api::cuMemPoolTrimTo;
    e.kind = Kind::Pool;
    e.device = static_cast<int16_t>(device);
    out.push_back(e);
  }
  trimmed.to_event(cleanup);
  out.push_back(cleanup);
}

}  // namespace gmp
