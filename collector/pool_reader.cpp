#include "pool_reader.h"
#include "records.h"

namespace gmp {

Event pool_reserved_event(const PoolReading& r, Api api) {
  Event e{};
  PoolReservedRecord{r.pool, r.reserved, r.high}.to_event(e);
  e.api = api;
  e.kind = Kind::Pool;
  e.device = static_cast<int16_t>(r.device);
  return e;
}

void PoolReader::maybe_read(uint64_t now_ns, std::vector<Event>& out) {
  if (read_ == nullptr || now_ns < next_ns_ || stopped_.load(std::memory_order_acquire)) return;
  next_ns_ = now_ns + kPoolReadNs;
  constexpr size_t kMaxPools = 512;
  buffer_.resize(kMaxPools);
  const size_t n = read_(buffer_.data(), buffer_.size());
  for (size_t i = 0; i < n && i < buffer_.size(); ++i) {
    Event e = pool_reserved_event(buffer_[i], Api::Collector);
    e.timestamp_ns = now_ns;
    out.push_back(e);
  }
}

}  // namespace gmp
