// NVML, loaded in this one place (dlopen of libnvidia-ml.so.1, never a link dependency), for the
// device limit's context figure and its memory queries (device_limit/) and the collector's
// telemetry (DriverHooks::read_nvml). Loaded on first need, never from inside dlsym; the process's
// own copy when it has one (the same soname gives the same library). Every symbol is the library's
// own, looked up past our dlsym, so the limited answers of device_limit/ never come back here.
#pragma once

#include <cstdint>

namespace gmp::shim::nvml {

// The few NVML ABI types used (stable since NVML 11; nvml.h is not a build dependency).
struct Memory {
  unsigned long long total, free, used;
};
struct MemoryV2 {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
inline constexpr int kSuccess = 0;
inline constexpr int kFunctionNotFound = 13;

struct Library {
  int (*get_handle)(const char* pci_bus_id, void** device) = nullptr;  // nullptr: NVML unusable
  int (*get_processes)(void* device, unsigned* count, void* infos) = nullptr;
  int (*memory_info)(void* device, Memory* out) = nullptr;
  int (*memory_info_v2)(void* device, MemoryV2* out) = nullptr;
};
const Library& library();

// NVML's handle of CUDA device `device`, remembered once found; nullptr while unknown.
void* known_device(int device);
// The same, found by the device's PCI bus id ("0000:65:00.0") when not known yet.
void* device(int device, const char* pci_bus_id);

// nvmlDeviceGetComputeRunningProcesses_v3's figure for the process `pid` on `device`, or
// kUnknownUsage (seam.h).
uint64_t process_usage(void* device, int pid);

}  // namespace gmp::shim::nvml
