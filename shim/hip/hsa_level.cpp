#include "hsa_level.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "../record.h"
#include "hip_devices.h"
#include "hip_runtime.h"

namespace gmp::shim::hsa_level {
namespace {

// --- Blocks that are not a HIP call's own: the runtime's, and the pools' reserves ---
struct Block {
  uint64_t size;
  uint64_t pool;  // the HIP pool whose reserve this is; 0: the runtime's (or, without HIP, the program's)
  int device;
  Kind kind;  // a foreign block's, as its allocation was recorded
};
std::mutex g_mutex;
std::unordered_map<uint64_t, Block>* g_blocks = new std::unordered_map<uint64_t, Block>;  // never destroyed:
std::unordered_map<uint64_t, uint64_t>* g_reserved = new std::unordered_map<uint64_t, uint64_t>;  // exit; by pool

// The pool's new reserved bytes, recorded as a reading. Every change passes here, so no high
// watermark is needed (0: not read) and the pool's peak and its instant are exact.
void record_reserve(Api api, uint64_t pool, int device, uint64_t reserved) {
  session_record(device, [&](Event& e) {
    PoolReservedRecord{pool, reserved, 0}.to_event(e);
    e.api = api;
    e.kind = Kind::Pool;
  });
}

// A block that is no HIP call's: pinned host memory from a host pool; device memory the runtime's
// own while HIP is loaded, else the program's.
Kind foreign_kind(int device) {
  return device < 0 ? Kind::HostPinned : hip::hip_loaded() ? Kind::Runtime : Kind::Linear;
}

int16_t result_of(hsa_status_t s) {
  return s == HSA_STATUS_ERROR_OUT_OF_RESOURCES ? kOutOfMemory : static_cast<int16_t>(s);
}

// An HSA allocation that is no HIP call's: the runtime's own, or the program's without HIP.
void record_foreign(hsa_amd_memory_pool_t pool, size_t size, uint64_t ptr, int16_t result) {
  // A pool HSA did not list, or a GPU hidden from HIP, is counted as a host pool's.
  const int dev = std::max(hip_devices::pool_device(pool), -1);
  const Kind kind = foreign_kind(dev);
  if (result == 0) {
    std::lock_guard lock(g_mutex);
    (*g_blocks)[ptr] = {size, 0, dev, kind};
  }
  uint32_t stack;
  if (!prepare_allocation_event(&stack)) return;
  session_record(dev, [&](Event& e) {
    AllocRecord{result == 0 ? ptr : 0, size}.to_event(e);
    e.api = Api::hsa_amd_memory_pool_allocate;
    e.kind = kind;
    e.result = result;
    e.stack_id = stack;
  });
  if (result == kOutOfMemory) session_wait_for_collector();
}

// --- The calling thread's outermost HIP call and the HSA allocations made inside it ---
struct Pending {
  hsa_amd_memory_pool_t pool;
  uint64_t ptr, size;
};
constexpr int kMaxPending = 16;
struct ThreadCall {
  int depth = 0;
  Claim claim = Claim::None;
  int pending = 0;
  Pending blocks[kMaxPending];
};
thread_local ThreadCall t_call;

}  // namespace

HipCall::HipCall(Claim claim) : outermost_(t_call.depth++ == 0) {
  if (outermost_) {
    t_call.claim = claim;
    t_call.pending = 0;
  }
}

HipCall::~HipCall() {
  if (outermost_ && !settled_) settle(0);
  --t_call.depth;
}

uint64_t HipCall::settle(uint64_t address, uint64_t pool, int device) {
  if (!outermost_ || settled_) return 0;
  settled_ = true;
  uint64_t own = 0, reserved = 0;
  bool grew = false;
  for (int i = 0; i < t_call.pending; ++i) {
    const Pending& p = t_call.blocks[i];
    const bool holds = address != 0 && address >= p.ptr && address - p.ptr < p.size;
    const Claim c = t_call.claim;
    if ((c == Claim::Address && holds) || (c == Claim::All && address != 0)) {
      own += p.size;
    } else if (c == Claim::PoolReserve && address != 0 && pool != 0) {
      own += p.size;
      std::lock_guard lock(g_mutex);
      (*g_blocks)[p.ptr] = {p.size, pool, device, Kind::Pool};
      reserved = (*g_reserved)[pool] += p.size;
      grew = true;
    } else {
      record_foreign(p.pool, p.size, p.ptr, 0);
    }
  }
  t_call.pending = 0;
  if (grew && recording()) record_reserve(Api::hsa_amd_memory_pool_allocate, pool, device, reserved);
  return own;
}

void allocated(hsa_amd_memory_pool_t pool, size_t size, void* ptr) {
  const auto address = reinterpret_cast<uint64_t>(ptr);
  if (t_call.depth > 0 && t_call.pending < kMaxPending) {
    t_call.blocks[t_call.pending++] = {pool, address, size};
    return;
  }
  record_foreign(pool, size, address, 0);
}

void allocation_failed(hsa_amd_memory_pool_t pool, size_t size, hsa_status_t status) {
  if (t_call.depth > 0) return;  // the HIP call reports its own failure
  record_foreign(pool, size, 0, result_of(status));
}

FreeTicket before_free(void* ptr) {
  const auto address = reinterpret_cast<uint64_t>(ptr);
  FreeTicket t;
  {
    // Out of the table before the call: once the runtime has freed it, another thread may be given
    // the same address.
    std::lock_guard lock(g_mutex);
    auto it = g_blocks->find(address);
    if (it == g_blocks->end()) return t;
    t.pool = it->second.pool;
    t.size = it->second.size;
    t.device = it->second.device;
    t.kind = it->second.kind;
    g_blocks->erase(it);
  }
  if (t.pool == 0) {
    // The runtime's (or the program's) block: released before the call, as every release.
    record_release(Op::Free, Api::hsa_amd_memory_pool_free, t.kind, address);
    t.recorded = true;
  }
  return t;
}

void after_free(void* ptr, const FreeTicket& t, hsa_status_t status) {
  const auto address = reinterpret_cast<uint64_t>(ptr);
  if (t.size == 0) return;
  if (status != HSA_STATUS_SUCCESS) {
    {
      std::lock_guard lock(g_mutex);
      (*g_blocks)[address] = {t.size, t.pool, t.device, t.kind};
    }
    if (t.recorded) {
      record_release_failed(Api::hsa_amd_memory_pool_free, t.kind, address, static_cast<int>(status));
    }
    return;
  }
  if (t.pool == 0) return;
  uint64_t reserved;
  {
    std::lock_guard lock(g_mutex);
    auto it = g_reserved->find(t.pool);
    if (it == g_reserved->end()) return;  // the pool was destroyed meanwhile: its record released it all
    it->second -= std::min(it->second, t.size);
    reserved = it->second;
  }
  if (recording()) record_reserve(Api::hsa_amd_memory_pool_free, t.pool, t.device, reserved);
}

TakenPool take_pool(uint64_t pool) {
  TakenPool t{pool};
  std::lock_guard lock(g_mutex);
  std::erase_if(*g_blocks, [&](const auto& kv) {
    if (kv.second.pool != pool) return false;
    t.blocks.emplace_back(kv.first, kv.second.size);
    t.device = kv.second.device;
    return true;
  });
  if (auto it = g_reserved->find(pool); it != g_reserved->end()) {
    t.reserved = it->second;
    g_reserved->erase(it);
  }
  return t;
}

void restore_pool(const TakenPool& t) {
  std::lock_guard lock(g_mutex);
  for (const auto& [address, size] : t.blocks) (*g_blocks)[address] = {size, t.pool, t.device, Kind::Pool};
  if (t.reserved != 0 || !t.blocks.empty()) (*g_reserved)[t.pool] = t.reserved;
}

void reset() {
  std::lock_guard lock(g_mutex);
  g_blocks->clear();
  g_reserved->clear();
}

}  // namespace gmp::shim::hsa_level
