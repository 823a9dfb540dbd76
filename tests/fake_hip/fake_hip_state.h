// The fake HIP runtime's shared state (README.md): one mutex, never destroyed. HSA is reached only
// through its exported functions, as the real runtime does, so a preloaded profiler sees each call.
#pragma once

#include "../../shim/hip/hip_api.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace fakehip {

inline constexpr int kMaxDevices = 8;
inline constexpr uint64_t kPitchAlign = 256;
inline constexpr uint64_t kStreamArgBuffer = 1ull << 20;  // each stream's kernel-argument buffer
inline constexpr uint64_t kDeviceStaging = 64ull << 10;   // made inside a device's first hipMalloc
inline constexpr uint64_t kVmmGranule = 2ull << 20;

struct Pool;

struct Stream {
  int device;
  void* arg_buffer;  // the runtime's own HSA allocation
};

struct PoolBlock {
  uint64_t size;  // rounded (the HSA allocation's)
  uint64_t used;  // 0: free in the pool
};

struct Pool {
  int device;
  bool is_default;
  uint64_t release_threshold = 0;
  uint64_t reserved_high = 0, used_high = 0;
  std::map<uint64_t, PoolBlock> blocks;  // by address
  uint64_t reserved() const;
  uint64_t used() const;
};

struct Physical {
  uint64_t size;
  int device;
  bool released = false;
  int mappings = 0;
};

struct State {
  std::mutex mu;
  bool initialised = false;
  int devices = 1;
  bool staged[kMaxDevices] = {};
  std::map<uint64_t, uint64_t> linear;   // address -> size: hipMalloc and kin (HSA blocks)
  std::map<uint64_t, uint64_t> managed;  // address -> size (mmap)
  std::set<uint64_t> pinned;             // hipHostMalloc and kin (HSA host pool)
  std::set<Stream*> streams;
  std::set<Pool*> pools;
  Pool* default_pool[kMaxDevices] = {};
  Pool* current_pool[kMaxDevices] = {};
  std::set<hipArray*> arrays;
  std::map<uint64_t, Physical*> physical;                  // handle -> physical allocation
  std::map<uint64_t, std::pair<uint64_t, Physical*>> maps;  // va -> (size, handle)
  std::map<uint64_t, uint64_t> reservations;               // va -> size
  uint64_t next_va = 0x600000000000ull;
};

State& state();
using Lock = std::unique_lock<std::mutex>;

// Initialises on first use (as every HIP call does): HSA too. Requires the lock.
void ensure_init_locked();
int& current_device();  // the calling thread's
uint64_t round_up(uint64_t v, uint64_t g);
hsa_amd_memory_pool_t vram_pool(int device, bool fine);

// Stream-ordered pools (fake_hip_pool.cpp).
void release_free_blocks_locked(Pool* p, uint64_t keep);  // frees whole free blocks until reserved <= keep
void synchronise_pools_locked();                           // every pool down to its release threshold
bool pool_free_locked(uint64_t address);                   // a pool allocation freed; false if none

}  // namespace fakehip
