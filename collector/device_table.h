// Device names and sizes, filled by the shim from the application thread that first touches a
// device (the driver is certainly alive there) and read by the collector when it processes the
// matching DeviceInfo event; the ring's publish/consume ordering makes the write visible.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "manifest_record.h"
#include "seam.h"  // kMaxDevices

namespace gmp {

struct DeviceTable {
  struct Entry {
    char name[128];
    char pci_bus_id[32];  // "0000:65:00.0": how NVML finds the same device
    uint64_t total_bytes;
  };
  std::array<Entry, kMaxDevices> entries{};
  std::atomic<uint64_t> seen{0};  // bit per ordinal

  // How manifests and OOM bundles list a device (manifest_record.h).
  DeviceEntry entry(int device) const {
    const Entry& e = entries[static_cast<size_t>(device)];
    return {device, std::string(e.name), e.total_bytes};
  }

  // True for exactly one caller per ordinal.
  bool claim(int device) {
    if (device < 0 || device >= kMaxDevices) return false;
    const uint64_t bit = 1ull << device;
    if (seen.load(std::memory_order_relaxed) & bit) return false;
    return (seen.fetch_or(bit, std::memory_order_acq_rel) & bit) == 0;
  }
};

}  // namespace gmp
