#include "hip_devices.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "hip_runtime.h"

namespace gmp::shim::hip_devices {
namespace {

constexpr int kMaxPools = 256;
constexpr int kMaxDevices = 64;
struct PoolDevice {
  uint64_t pool;
  int device;
};
struct Tables {
  PoolDevice pools[kMaxPools];
  int pool_count = 0;
  hsa_agent_t agents[kMaxDevices];  // by HIP ordinal
  uint64_t totals[kMaxDevices];
  int device_count = 0;
};
Tables g_tables;
std::once_flag g_once;

// The HIP ordinal of the HSA GPU `gpu_index` under HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES),
// -2 when hidden or when the list is not one HIP reads as plain indices.
int visible_ordinal(int gpu_index) {
  const char* list = std::getenv("HIP_VISIBLE_DEVICES");
  if (list == nullptr) list = std::getenv("CUDA_VISIBLE_DEVICES");
  if (list == nullptr) return gpu_index;
  int ordinal = 0;
  for (const char* p = list; *p != '\0'; ++ordinal) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0')) return -2;
    if (v == gpu_index) return ordinal;
    p = *end == ',' ? end + 1 : end;
  }
  return -2;
}

struct Walk {
  int gpu_index = 0;
  int device = -1;  // of the agent whose pools are being listed
};

hsa_status_t add_pool(hsa_amd_memory_pool_t pool, void* data) {
  const int device = static_cast<Walk*>(data)->device;
  if (g_tables.pool_count < kMaxPools) g_tables.pools[g_tables.pool_count++] = {pool.handle, device};
  auto get = GMP_HIP_REAL(hsa_amd_memory_pool_get_info);
  hsa_amd_segment_t segment{};
  size_t size = 0;
  if (device >= 0 && device < kMaxDevices && get != nullptr &&
      get(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment) == HSA_STATUS_SUCCESS && segment == HSA_AMD_SEGMENT_GLOBAL &&
      get(pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size) == HSA_STATUS_SUCCESS && size > g_tables.totals[device]) {
    g_tables.totals[device] = size;
  }
  return HSA_STATUS_SUCCESS;
}

hsa_status_t add_agent(hsa_agent_t agent, void* data) {
  auto* walk = static_cast<Walk*>(data);
  auto info = GMP_HIP_REAL(hsa_agent_get_info);
  auto pools = GMP_HIP_REAL(hsa_amd_agent_iterate_memory_pools);
  hsa_device_type_t type{};
  if (info == nullptr || pools == nullptr || info(agent, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS) {
    return HSA_STATUS_SUCCESS;
  }
  Walk at{0, -1};
  if (type == HSA_DEVICE_TYPE_GPU) {
    at.device = visible_ordinal(walk->gpu_index++);
    if (at.device >= 0 && at.device < kMaxDevices) {
      g_tables.agents[at.device] = agent;
      if (at.device >= g_tables.device_count) g_tables.device_count = at.device + 1;
    }
  }
  pools(agent, add_pool, &at);
  return HSA_STATUS_SUCCESS;
}

const Tables& tables() {
  std::call_once(g_once, [] {
    Walk walk;
    if (auto iterate = GMP_HIP_REAL(hsa_iterate_agents)) iterate(add_agent, &walk);
  });
  return g_tables;
}

}  // namespace

int pool_device(hsa_amd_memory_pool_t pool) {
  const Tables& t = tables();
  for (int i = 0; i < t.pool_count; ++i) {
    if (t.pools[i].pool == pool.handle) return t.pools[i].device;
  }
  return -2;
}

bool info(int device, char* name, int name_len, char* pci, int pci_len, uint64_t* total) {
  const Tables& t = tables();
  auto get = GMP_HIP_REAL(hsa_agent_get_info);
  if (device < 0 || device >= t.device_count || t.agents[device].handle == 0 || get == nullptr) return false;
  const hsa_agent_t agent = t.agents[device];
  char product[64] = {};
  if (get(agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_PRODUCT_NAME), product) != HSA_STATUS_SUCCESS ||
      product[0] == '\0') {
    get(agent, HSA_AGENT_INFO_NAME, product);  // the gfx target, e.g. gfx942
  }
  product[sizeof product - 1] = '\0';
  std::snprintf(name, static_cast<size_t>(name_len), "%s", product);
  uint32_t bdf = 0, domain = 0;
  if (get(agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_BDFID), &bdf) == HSA_STATUS_SUCCESS) {
    get(agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_DOMAIN), &domain);
    std::snprintf(pci, static_cast<size_t>(pci_len), "%04x:%02x:%02x.%x", domain, (bdf >> 8) & 0xff, (bdf >> 3) & 0x1f,
                  bdf & 0x7);
  } else if (pci_len > 0) {
    pci[0] = '\0';
  }
  *total = t.totals[device];
  return true;
}

bool info_without_hsa(int device, char* name, int name_len, char* pci, int pci_len, uint64_t* total) {
  auto get_name = GMP_HIP_REAL(hipDeviceGetName);
  auto get_total = GMP_HIP_REAL(hipDeviceTotalMem);
  auto get_pci = GMP_HIP_REAL(hipDeviceGetPCIBusId);
  size_t bytes = 0;
  if (GMP_HIP_REAL(hsa_iterate_agents) != nullptr || get_name == nullptr || get_total == nullptr ||
      get_name(name, name_len, device) != hipSuccess || get_total(&bytes, device) != hipSuccess) {
    return false;
  }
  if (get_pci == nullptr || get_pci(pci, pci_len, device) != hipSuccess) pci[0] = '\0';
  *total = bytes;
  return true;
}

}  // namespace gmp::shim::hip_devices
