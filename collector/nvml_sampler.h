// Device telemetry through NVML, when the process can load it (dlopen of libnvidia-ml.so.1, never
// a link dependency): every GPUMEMPROF_SAMPLE_MS, each device's used/total memory and this
// process's own usage as the driver sees it, as `sample` events. Set next to the tracked figures,
// the difference shows what no allocation call does (CUDA context, modules, other libraries).
#pragma once

#include <cstdint>
#include <vector>

#include "device_table.h"
#include "event.h"

namespace gmp {

inline constexpr uint64_t kUnknownUsage = UINT64_MAX;

// nvmlDeviceGetComputeRunningProcesses_v3's figure for the process `pid` on `device`, or kUnknownUsage.
// Shared with the shim's device limit (shim/device_limit.cpp), which counts the context from it.
using NvmlGetProcesses = int (*)(void*, unsigned*, void*);
uint64_t nvml_process_usage(NvmlGetProcesses get_processes, void* device, int pid);

class NvmlSampler {
 public:
  NvmlSampler(uint32_t sample_ms, int pid);
  // When a period has passed, appends one Sample event per device seen (timestamps in ns).
  void maybe_sample(uint64_t now_ns, const DeviceTable& devices, std::vector<Event>& out);

 private:
  bool load();

  uint64_t period_ns_;
  int pid_;
  uint64_t next_ns_ = 0;
  int state_ = 0;  // 0 not tried, 1 loaded, -1 unavailable
  void* lib_ = nullptr;
  void* handles_[kMaxDevices] = {};
  int (*get_handle_)(const char*, void**) = nullptr;
  int (*get_memory_)(void*, void*) = nullptr;
  int (*get_processes_)(void*, unsigned*, void*) = nullptr;
};

}  // namespace gmp
