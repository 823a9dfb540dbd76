// The HSA level under the HIP runtime (docs/rocm.md §Two levels). Every HIP allocation ends in
// hsa_amd_memory_pool_allocate; the HIP wrappers record what the program asked for, and this
// decides what each HSA allocation is:
//   - the backing of the HIP call running on the same thread (not recorded again): the HSA block
//     holding the returned address (linear, managed, pinned), every block of an array call (their
//     sum is the array's size), or a stream-ordered pool's growth (its reserved bytes);
//   - otherwise, with the HIP runtime loaded, the runtime's own memory (kind runtime, or pinned host
//     memory from a host pool), freed when the runtime frees that address;
//   - without the HIP runtime (a program on HSA alone), the program's own (linear or pinned).
// Pool reserves are therefore exact: they move only at these HSA calls, wherever they happen
// (allocation misses, synchronisations, trims, another thread).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "event.h"
#include "hip_api.h"

namespace gmp::shim::hsa_level {

// What an outermost HIP call's own HSA allocations are.
enum class Claim : uint8_t {
  Address,      // the one holding the address the call returns
  All,          // all of them (arrays: padded for the image layout)
  PoolReserve,  // a stream-ordered pool's growth
  None,         // none: a release or query that allocates is the runtime's doing
};

// Brackets a wrapped HIP call on this thread. Only the outermost counts: a HIP call made from inside
// another (the runtime calling its own exported functions) records nothing (outermost() is false).
class HipCall {
 public:
  explicit HipCall(Claim claim);
  ~HipCall();  // whatever was not settled is the runtime's
  HipCall(const HipCall&) = delete;
  HipCall& operator=(const HipCall&) = delete;
  bool outermost() const { return outermost_; }
  // After the runtime returned `address` (0 on failure): records what was not the call's as the
  // runtime's and, for PoolReserve, the pool's new reserved bytes (pool handle, its device).
  // Returns the bytes the call's own HSA allocations add up to.
  uint64_t settle(uint64_t address, uint64_t pool = 0, int device = -1);

 private:
  bool outermost_;
  bool settled_ = false;
};

// From the hsa_amd_memory_pool_allocate wrapper: a successful allocation, or a failed one.
void allocated(hsa_amd_memory_pool_t pool, size_t size, void* ptr);
void allocation_failed(hsa_amd_memory_pool_t pool, size_t size, hsa_status_t status);

// From the hsa_amd_memory_pool_free wrapper, around the real call.
struct FreeTicket {
  bool recorded = false;  // a release event was recorded before the call
  uint64_t pool = 0;      // the HIP pool whose reserve the block was (0: none)
  uint64_t size = 0;
  int device = -1;
  Kind kind = Kind::None;  // a foreign block's kind, as its allocation was recorded
};
FreeTicket before_free(void* ptr);
void after_free(void* ptr, const FreeTicket& t, hsa_status_t status);

// hipMemPoolDestroy: the pool's blocks go with it (the destroy record, made before the call,
// releases them), and come back if the runtime refuses.
struct TakenPool {
  uint64_t pool = 0;
  uint64_t reserved = 0;
  std::vector<std::pair<uint64_t, uint64_t>> blocks;  // address, size
  int device = -1;
};
TakenPool take_pool(uint64_t pool);
void restore_pool(const TakenPool& taken);

// A forked child inherits blocks and pools that mean nothing to it.
void reset();

}  // namespace gmp::shim::hsa_level
