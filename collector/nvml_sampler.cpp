#include "nvml_sampler.h"

#include "records.h"

namespace gmp {

NvmlSampler::NvmlSampler(uint32_t sample_ms, int pid) : period_ns_(uint64_t{sample_ms} * 1'000'000ull), pid_(pid) {}

void NvmlSampler::maybe_sample(uint64_t now_ns, const DeviceTable& devices, std::vector<Event>& out) {
  if (period_ns_ == 0 || read_ == nullptr || now_ns < next_ns_) return;
  next_ns_ = now_ns + period_ns_;
  const uint64_t seen = devices.seen.load(std::memory_order_acquire);
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!(seen & (1ull << d)) || devices.entries[d].pci_bus_id[0] == '\0') continue;
    NvmlReading r;
    if (!read_(d, devices.entries[d].pci_bus_id, pid_, &r)) continue;
    Event e{};
    e.timestamp_ns = now_ns;
    SampleRecord{r.used, r.total, r.process}.to_event(e);
    e.api = Api::Collector;
    e.device = static_cast<int16_t>(d);
    out.push_back(e);
  }
}

}  // namespace gmp
