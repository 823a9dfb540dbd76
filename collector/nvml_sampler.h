// Device telemetry through NVML, when the process can load it (the shim's DriverHooks::read_nvml:
// NVML is loaded in one place, shim/nvml.cpp, never a link dependency): every GPUMEMPROF_SAMPLE_MS,
// each device's used/total memory and this process's own usage as the driver sees it, as `sample`
// events. Set next to the tracked figures, the difference shows what no allocation call does (CUDA
// context, modules, other libraries).
#pragma once

#include <cstdint>
#include <vector>

#include "device_table.h"
#include "event.h"
#include "seam.h"  // NvmlReadFn

namespace gmp {

class NvmlSampler {
 public:
  NvmlSampler(uint32_t sample_ms, int pid);
  void set(NvmlReadFn read) { read_ = read; }
  // When a period has passed, appends one Sample event per device seen (timestamps in ns).
  void maybe_sample(uint64_t now_ns, const DeviceTable& devices, std::vector<Event>& out);

 private:
  uint64_t period_ns_;
  int pid_;
  uint64_t next_ns_ = 0;
  NvmlReadFn read_ = nullptr;
};

}  // namespace gmp
