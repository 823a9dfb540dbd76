// Library load and unload. Loading does nothing but hand the session its driver callbacks, the
// collector's only way back into the shim (no allocation, no thread, no file). Unloading (exit,
// after every atexit handler, so after cudart's own teardown) drains the ring and writes
// summary.json.
#include <cstring>

#include "../collector/seam.h"
#include "capture.h"
#include "graph_memory.h"
#include "hip/hip_devices.h"
#include "hip/hsa_level.h"
#include "nvml.h"
#include "pool_tracker.h"
#include "record.h"

namespace {

// What the driver alone knows: the pools' and the graph memory pool's reserved bytes.
void refresh_driver_figures() {
  gmp::shim::pools::refresh_all();
  gmp::shim::graph_memory::refresh_all();
}

void forget_parent_driver_state() {
  gmp::shim::pools::reset();
  gmp::shim::graph_memory::reset();
  gmp::shim::capture::reset();
  gmp::shim::hsa_level::reset();
}

// A CUDA device's, or without the CUDA driver an AMD GPU's, as HSA describes it (never asked of
// HIP: this runs at a device's first event, possibly inside HIP's own calls).
bool device_info(int device, char* name, int name_len, char* pci, int pci_len, uint64_t* total) {
  auto get_name = GMP_REAL(cuDeviceGetName);
  auto get_total = GMP_REAL(cuDeviceTotalMem_v2);
  auto get_pci = GMP_REAL(cuDeviceGetPCIBusId);
  if (get_name == nullptr) {
    namespace amd = gmp::shim::hip_devices;
    return amd::info(device, name, name_len, pci, pci_len, total) ||
           amd::info_without_hsa(device, name, name_len, pci, pci_len, total);
  }
  size_t bytes = 0;
  if (get_total == nullptr || get_name(name, name_len, device) != CUDA_SUCCESS ||
      get_total(&bytes, device) != CUDA_SUCCESS) {
    return false;
  }
  if (get_pci == nullptr || get_pci(pci, pci_len, device) != CUDA_SUCCESS) pci[0] = '\0';
  *total = bytes;
  return true;
}

// The watchdog's trim: keeping 0 bytes releases everything the pool does not hold for live
// allocations, so the pool shrinks to its in-use size (rounded by the driver).
bool trim_pool(uint64_t handle, uint64_t* before, uint64_t* after) {
  auto get = GMP_REAL(cuMemPoolGetAttribute);
  auto trim = GMP_REAL(cuMemPoolTrimTo);
  if (get == nullptr || trim == nullptr) return false;
  const auto pool = reinterpret_cast<CUmemoryPool>(handle);
  cuuint64_t b = 0, a = 0;
  gmp::shim::capture::Relaxed relaxed;  // the collector's thread must not invalidate a capture (capture.h)
  gmp::shim::pools::trimmed(pool);
  if (get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &b) != CUDA_SUCCESS || trim(pool, 0) != CUDA_SUCCESS ||
      get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &a) != CUDA_SUCCESS) {
    return false;
  }
  *before = b;
  *after = a;
  return true;
}

// The device's figures as NVML itself reports them: the telemetry describes the real device, also
// under a device limit.
bool read_nvml(int device, const char* pci_bus_id, int pid, gmp::NvmlReading* out) {
  namespace nvml = gmp::shim::nvml;
  const auto memory_info = nvml::library().memory_info;
  void* handle = memory_info != nullptr ? nvml::device(device, pci_bus_id) : nullptr;
  nvml::Memory mem{};
  if (handle == nullptr || memory_info(handle, &mem) != nvml::kSuccess) return false;
  *out = {mem.used, mem.total, nvml::process_usage(handle, pid)};
  return true;
}

int driver_version() {
  auto get = GMP_REAL(cuDriverGetVersion);
  int v = 0;
  return get != nullptr && get(&v) == CUDA_SUCCESS ? v : 0;
}

__attribute__((constructor)) void gmp_shim_load() {
  gmp::DriverHooks hooks;
  hooks.device_info = device_info;
  hooks.refresh_pools = refresh_driver_figures;
  hooks.read_pools = gmp::shim::pools::read_all;
  hooks.trim_pool = trim_pool;
  hooks.read_nvml = read_nvml;
  hooks.after_fork_child = forget_parent_driver_state;
  hooks.driver_version = driver_version;
  gmp::session_set_driver_hooks(hooks);
}

__attribute__((destructor)) void gmp_shim_unload() { gmp::session_finalize(); }

}  // namespace
