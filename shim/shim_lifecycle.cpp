// Library load and unload. Loading does nothing but hand the session its driver callbacks (no
// allocation, no thread, no file). Unloading (exit, after every atexit handler, so after cudart's
// own teardown) drains the ring and writes summary.json.
#include <cstring>

#include "../collector/session.h"
#include "capture.h"
#include "graph_memory.h"
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
}

bool device_info(int device, char* name, int name_len, char* pci, int pci_len, uint64_t* total) {
  auto get_name = GMP_REAL(cuDeviceGetName);
  auto get_total = GMP_REAL(cuDeviceTotalMem_v2);
  auto get_pci = GMP_REAL(cuDeviceGetPCIBusId);
  size_t bytes = 0;
  if (get_name == nullptr || get_total == nullptr || get_name(name, name_len, device) != CUDA_SUCCESS ||
      get_total(&bytes, device) != CUDA_SUCCESS) {
    return false;
  }
  if (get_pci == nullptr || get_pci(pci, pci_len, device) != CUDA_SUCCESS) pci[0] = '\0';
  *total = bytes;
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
  hooks.after_fork_child = forget_parent_driver_state;
  hooks.driver_version = driver_version;
  gmp::session_set_driver_hooks(hooks);
}

__attribute__((destructor)) void gmp_shim_unload() { gmp::session_finalize(); }

}  // namespace
