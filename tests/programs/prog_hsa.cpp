// A program on the (fake) HSA runtime alone, without HIP: its pool allocations are its own memory.
// Allocates 1 MiB and frees it, then 2 MiB left live.
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <cstdio>

namespace {

hsa_status_t first_gpu_pool(hsa_amd_memory_pool_t pool, void* out) {
  auto* found = static_cast<hsa_amd_memory_pool_t*>(out);
  if (found->handle == 0) *found = pool;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t gpu_agent(hsa_agent_t agent, void* out) {
  hsa_device_type_t type{};
  hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
  if (type == HSA_DEVICE_TYPE_GPU) hsa_amd_agent_iterate_memory_pools(agent, first_gpu_pool, out);
  return HSA_STATUS_SUCCESS;
}

}  // namespace

int main() {
  if (hsa_init() != HSA_STATUS_SUCCESS) return 1;
  hsa_amd_memory_pool_t pool{0};
  hsa_iterate_agents(gpu_agent, &pool);
  void *a = nullptr, *b = nullptr;
  if (pool.handle == 0 || hsa_amd_memory_pool_allocate(pool, 1 << 20, 0, &a) != HSA_STATUS_SUCCESS ||
      hsa_amd_memory_pool_free(a) != HSA_STATUS_SUCCESS ||
      hsa_amd_memory_pool_allocate(pool, 2 << 20, 0, &b) != HSA_STATUS_SUCCESS) {
    std::fprintf(stderr, "prog_hsa: HSA refused\n");
    return 1;
  }
  return 0;
}
