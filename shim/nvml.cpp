#include "nvml.h"

#include <dlfcn.h>

#include <atomic>

#include "../collector/seam.h"
#include "real_driver.h"

namespace gmp::shim::nvml {
namespace {

struct ProcessInfo {  // nvmlProcessInfo_t as filled by nvmlDeviceGetComputeRunningProcesses_v3
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
constexpr unsigned kMaxProcesses = 256;

std::atomic<void*> g_handles[kMaxDevices];

Library load() {
  Library out;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return out;
  auto lookup = [&](const char* name) { return real_dlsym()(lib, name); };
  auto init = reinterpret_cast<int (*)()>(lookup("nvmlInit_v2"));
  if (init != nullptr && init() == kSuccess) {
    out.get_handle = reinterpret_cast<decltype(out.get_handle)>(lookup("nvmlDeviceGetHandleByPciBusId_v2"));
    out.get_processes =
        reinterpret_cast<decltype(out.get_processes)>(lookup("nvmlDeviceGetComputeRunningProcesses_v3"));
    out.memory_info = reinterpret_cast<decltype(out.memory_info)>(lookup("nvmlDeviceGetMemoryInfo"));
    out.memory_info_v2 = reinterpret_cast<decltype(out.memory_info_v2)>(lookup("nvmlDeviceGetMemoryInfo_v2"));
  }
  if (out.get_handle == nullptr || out.memory_info == nullptr) {
    log_info("NVML is present but unusable; no device telemetry");
  }
  return out;
}

}  // namespace

// No lock is held while loading: the collector's thread may load while an application thread,
// inside dlopen with the loader's lock, reaches the device limit. Two threads that both load get
// the same library and the same pointers; one copy is kept.
const Library& library() {
  static std::atomic<const Library*> g_library{nullptr};
  const Library* l = g_library.load(std::memory_order_acquire);
  if (l != nullptr) return *l;
  auto* mine = new Library(load());  // never freed: read until the process ends
  if (g_library.compare_exchange_strong(l, mine, std::memory_order_acq_rel)) return *mine;
  delete mine;
  return *l;
}

void* known_device(int device) {
  return device >= 0 && device < kMaxDevices ? g_handles[device].load(std::memory_order_acquire) : nullptr;
}

void* device(int device, const char* pci_bus_id) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  void* h = g_handles[device].load(std::memory_order_acquire);
  if (h != nullptr || library().get_handle == nullptr) return h;
  if (library().get_handle(pci_bus_id, &h) != kSuccess) return nullptr;
  g_handles[device].store(h, std::memory_order_release);
  return h;
}

uint64_t process_usage(void* device, int pid) {
  if (library().get_processes == nullptr) return kUnknownUsage;
  ProcessInfo infos[kMaxProcesses];
  unsigned count = kMaxProcesses;
  if (library().get_processes(device, &count, infos) != kSuccess) return kUnknownUsage;
  for (unsigned i = 0; i < count && i < kMaxProcesses; ++i) {
    if (static_cast<int>(infos[i].pid) == pid) return infos[i].used_gpu_memory;
  }
  return kUnknownUsage;
}

}  // namespace gmp::shim::nvml
