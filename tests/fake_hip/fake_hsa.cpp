// Fake HSA runtime (libhsa-runtime64.so.1): agents, memory pools and pool allocations, enough for
// the fake HIP runtime above it and for the shim's HSA level. Rules in README.md.
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "fake_config.h"
#include "fake_hsa_hooks.h"

namespace {

constexpr int kMaxGpus = 8;
constexpr uint64_t kGranule = 4096;
constexpr uint64_t kCpuAgent = 0x1;
constexpr uint64_t kGpuAgentBase = 0x100;   // GPU i: kGpuAgentBase + i
constexpr uint64_t kHostPool = 0x1000;      // the CPU agent's (fine-grained, system memory)
constexpr uint64_t kCoarsePoolBase = 0x2000;  // GPU i's coarse-grained VRAM pool
constexpr uint64_t kFinePoolBase = 0x3000;    // GPU i's fine-grained VRAM pool (same VRAM)
constexpr uint64_t kHostPoolSize = 64ull << 30;
constexpr uint64_t kVramBase = 0x7e0000000000ull;  // GPU i's addresses: kVramBase + i << 40

struct Block {
  uint64_t size;  // rounded, what is charged
  int gpu;        // -1: host pool
};

struct State {
  std::mutex mu;
  int init_count = 0;
  bool configured = false;
  int gpus = 1;
  uint64_t capacity = 16ull << 30;
  uint64_t charged[kMaxGpus] = {};
  uint64_t next_va[kMaxGpus] = {};
  std::map<uint64_t, std::vector<uint64_t>> reuse[kMaxGpus];  // rounded size -> freed addresses (LIFO)
  std::map<uint64_t, Block> blocks;
};
State& state() {
  static State* s = new State;  // never destroyed: callers may come from exit handlers
  return *s;
}

void configure(State& s) {
  if (s.configured) return;
  s.configured = true;
  s.gpus = fakecuda::env_device_count("FAKE_HIP_DEVICES", "fakehip", kMaxGpus);
  s.capacity = fakecuda::env_capacity("FAKE_HIP_CAPACITY", "fakehip", 16ull << 30);
  for (int i = 0; i < kMaxGpus; ++i) s.next_va[i] = kVramBase + (uint64_t(i) << 40) + (1ull << 20);
}

// The GPU a pool belongs to, -1 for the host pool, -2 for no pool of ours.
int pool_gpu(const State& s, uint64_t pool) {
  if (pool == kHostPool) return -1;
  for (uint64_t base : {kCoarsePoolBase, kFinePoolBase}) {
    if (pool >= base && pool < base + uint64_t(s.gpus)) return static_cast<int>(pool - base);
  }
  return -2;
}

int agent_gpu(const State& s, uint64_t agent) {
  if (agent == kCpuAgent) return -1;
  if (agent >= kGpuAgentBase && agent < kGpuAgentBase + uint64_t(s.gpus)) return static_cast<int>(agent - kGpuAgentBase);
  return -2;
}

uint64_t round_up(uint64_t v, uint64_t g) { return (v + g - 1) / g * g; }

}  // namespace

extern "C" {

hsa_status_t hsa_init() {
  State& s = state();
  std::lock_guard lock(s.mu);
  configure(s);
  ++s.init_count;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_shut_down() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  --s.init_count;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t, void*), void* data) {
  State& s = state();
  int gpus;
  {
    std::lock_guard lock(s.mu);
    if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
    gpus = s.gpus;
  }
  if (callback == nullptr) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  // The CPU agent first, as ROCr lists them.
  if (hsa_status_t r = callback(hsa_agent_t{kCpuAgent}, data); r != HSA_STATUS_SUCCESS) return r;
  for (int i = 0; i < gpus; ++i) {
    if (hsa_status_t r = callback(hsa_agent_t{kGpuAgentBase + uint64_t(i)}, data); r != HSA_STATUS_SUCCESS) return r;
  }
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attribute, void* value) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  const int gpu = agent_gpu(s, agent.handle);
  if (gpu == -2) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (value == nullptr) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (static_cast<int>(attribute)) {
    case HSA_AGENT_INFO_DEVICE:
      *static_cast<hsa_device_type_t*>(value) = gpu < 0 ? HSA_DEVICE_TYPE_CPU : HSA_DEVICE_TYPE_GPU;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_NAME:  // char[64]
      std::snprintf(static_cast<char*>(value), 64, "%s", gpu < 0 ? "Fake CPU" : "gfx942");
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME:  // char[64]
      if (gpu < 0) {
        std::snprintf(static_cast<char*>(value), 64, "Fake CPU");
      } else {
        std::snprintf(static_cast<char*>(value), 64, "Fake AMD GPU %d", gpu);
      }
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_BDFID:  // uint32_t: bus << 8 | device << 3 | function
      *static_cast<uint32_t*>(value) = gpu < 0 ? 0 : uint32_t(0x10 + gpu) << 8;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_DOMAIN:
      *static_cast<uint32_t*>(value) = 0;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t agent,
                                                hsa_status_t (*callback)(hsa_amd_memory_pool_t, void*), void* data) {
  State& s = state();
  int gpu;
  {
    std::lock_guard lock(s.mu);
    if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
    gpu = agent_gpu(s, agent.handle);
  }
  if (gpu == -2) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (callback == nullptr) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (gpu < 0) return callback(hsa_amd_memory_pool_t{kHostPool}, data);
  if (hsa_status_t r = callback(hsa_amd_memory_pool_t{kCoarsePoolBase + uint64_t(gpu)}, data); r != HSA_STATUS_SUCCESS) {
    return r;
  }
  return callback(hsa_amd_memory_pool_t{kFinePoolBase + uint64_t(gpu)}, data);
}

hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool, hsa_amd_memory_pool_info_t attribute,
                                          void* value) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  const int gpu = pool_gpu(s, pool.handle);
  if (gpu == -2) return static_cast<hsa_status_t>(HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
  if (value == nullptr) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (attribute) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
      *static_cast<hsa_amd_segment_t*>(value) = HSA_AMD_SEGMENT_GLOBAL;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
      *static_cast<uint32_t*>(value) = pool.handle >= kCoarsePoolBase && pool.handle < kFinePoolBase
                                           ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
                                           : HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_SIZE:
      *static_cast<size_t*>(value) = gpu < 0 ? kHostPoolSize : s.capacity;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
      *static_cast<bool*>(value) = true;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE:
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT:
      *static_cast<size_t*>(value) = kGranule;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t, void** ptr) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  const int gpu = pool_gpu(s, pool.handle);
  if (gpu == -2) return static_cast<hsa_status_t>(HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
  if (ptr == nullptr || size == 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const uint64_t rounded = round_up(size, kGranule);
  uint64_t address;
  if (gpu < 0) {
    // System memory the program may touch.
    void* p = std::aligned_alloc(kGranule, rounded);
    if (p == nullptr) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    address = reinterpret_cast<uint64_t>(p);
  } else {
    if (s.charged[gpu] + rounded > s.capacity) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    s.charged[gpu] += rounded;
    // VRAM is never touched from the host: addresses only, the most recently freed of a size first.
    auto& freed = s.reuse[gpu][rounded];
    if (!freed.empty()) {
      address = freed.back();
      freed.pop_back();
    } else {
      address = s.next_va[gpu];
      s.next_va[gpu] += round_up(rounded, 1 << 20);
    }
  }
  s.blocks[address] = {rounded, gpu};
  *ptr = reinterpret_cast<void*>(address);
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_memory_pool_free(void* ptr) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  auto it = s.blocks.find(reinterpret_cast<uint64_t>(ptr));
  if (it == s.blocks.end()) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const Block b = it->second;
  s.blocks.erase(it);
  if (b.gpu < 0) {
    std::free(ptr);
  } else {
    s.charged[b.gpu] -= b.size;
    s.reuse[b.gpu][b.size].push_back(reinterpret_cast<uint64_t>(ptr));
  }
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_agents_allow_access(uint32_t num_agents, const hsa_agent_t*, const uint32_t*, const void* ptr) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (num_agents == 0 || !s.blocks.contains(reinterpret_cast<uint64_t>(ptr))) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}

// --- test hooks (fake_hsa_hooks.h) ---
uint64_t fakehsa_charged_bytes(int gpu) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return gpu >= 0 && gpu < kMaxGpus ? s.charged[gpu] : 0;
}

uint64_t fakehsa_gpu_pool(int gpu, int fine) {
  return (fine != 0 ? kFinePoolBase : kCoarsePoolBase) + uint64_t(gpu);
}

uint64_t fakehsa_host_pool() { return kHostPool; }

int fakehsa_gpu_count() {
  State& s = state();
  std::lock_guard lock(s.mu);
  configure(s);
  return s.gpus;
}

uint64_t fakehsa_capacity() {
  State& s = state();
  std::lock_guard lock(s.mu);
  configure(s);
  return s.capacity;
}

}  // extern "C"
