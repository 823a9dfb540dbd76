// A fake libc10_cuda.so: PyTorch's CUDA caching allocator as far as gpumemprof's framework bridge
// sees it (README.md). The classes, the allocator object and TraceEntry live in PyTorch's own
// namespaces, so their mangled names and typeinfo names are the ones the bridge checks; the slot
// of attachAllocatorTraceTracker and TraceEntry's layout are those of torch 2.11, written here
// from PyTorch's header, never taken from the shim's table (the test compares the two).
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "driver_loader.h"

#define FAKE_TORCH_API extern "C" __attribute__((visibility("default")))

namespace c10::cuda::CUDACachingAllocator {

// torch 2.11's c10/cuda/CUDACachingAllocator.h, member for member: the bridge reads action,
// device, addr, stream and size by offset.
struct TraceEntry {
  enum Action {
    ALLOC,
    FREE_REQUESTED,
    FREE_COMPLETED,
    SEGMENT_ALLOC,
    SEGMENT_FREE,
    SEGMENT_MAP,
    SEGMENT_UNMAP,
    SNAPSHOT,
    OOM,
    USER_DEFINED
  };
  Action action_;
  int8_t device_;                  // c10::DeviceIndex
  size_t addr_;                    // for OOM: the device's free bytes
  std::shared_ptr<void> context_;  // std::shared_ptr<GatheredContext>
  CUstream stream_;                // cudaStream_t
  size_t size_;
  std::pair<uint64_t, uint64_t> mempool_;  // MempoolId_t
  int64_t time_;                           // trace_time_
  std::string compile_context_, user_metadata_;
};
static_assert(sizeof(TraceEntry) == 136);

using AllocatorTraceTracker = std::function<void(const TraceEntry&)>;

// The base class of every CUDA allocator. Its virtual table, as in 2.11: the destructor's two
// entries (complete, deleting), 42 methods the bridge never calls (raw_alloc, emptyCache,
// getDeviceStats, ... in PyTorch: here they only hold the places), then the tracker attach at 44.
class CUDAAllocator {
 public:
  virtual ~CUDAAllocator() = default;
  // clang-format off
#define FAKE_TORCH_SLOT(n) virtual int slot_##n() const { return n; }
  FAKE_TORCH_SLOT(2) FAKE_TORCH_SLOT(3) FAKE_TORCH_SLOT(4) FAKE_TORCH_SLOT(5) FAKE_TORCH_SLOT(6)
  FAKE_TORCH_SLOT(7) FAKE_TORCH_SLOT(8) FAKE_TORCH_SLOT(9) FAKE_TORCH_SLOT(10) FAKE_TORCH_SLOT(11)
  FAKE_TORCH_SLOT(12) FAKE_TORCH_SLOT(13) FAKE_TORCH_SLOT(14) FAKE_TORCH_SLOT(15) FAKE_TORCH_SLOT(16)
  FAKE_TORCH_SLOT(17) FAKE_TORCH_SLOT(18) FAKE_TORCH_SLOT(19) FAKE_TORCH_SLOT(20) FAKE_TORCH_SLOT(21)
  FAKE_TORCH_SLOT(22) FAKE_TORCH_SLOT(23) FAKE_TORCH_SLOT(24) FAKE_TORCH_SLOT(25) FAKE_TORCH_SLOT(26)
  FAKE_TORCH_SLOT(27) FAKE_TORCH_SLOT(28) FAKE_TORCH_SLOT(29) FAKE_TORCH_SLOT(30) FAKE_TORCH_SLOT(31)
  FAKE_TORCH_SLOT(32) FAKE_TORCH_SLOT(33) FAKE_TORCH_SLOT(34) FAKE_TORCH_SLOT(35) FAKE_TORCH_SLOT(36)
  FAKE_TORCH_SLOT(37) FAKE_TORCH_SLOT(38) FAKE_TORCH_SLOT(39) FAKE_TORCH_SLOT(40) FAKE_TORCH_SLOT(41)
  FAKE_TORCH_SLOT(42) FAKE_TORCH_SLOT(43)
#undef FAKE_TORCH_SLOT
  virtual void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) = 0;
  // clang-format on
};

// The object PyTorch's allocator calls go through, set when the library loads.
std::atomic<CUDAAllocator*> allocator;

}  // namespace c10::cuda::CUDACachingAllocator

namespace {

namespace alloc = c10::cuda::CUDACachingAllocator;
using alloc::TraceEntry;

constexpr uint64_t kMiB = 1 << 20;
constexpr int kMaxDevices = 8;

struct Counter {
  uint64_t current = 0, peak = 0;
  void add(uint64_t n) {
    current += n;
    if (current > peak) peak = current;
  }
  void sub(uint64_t n) { current -= n; }
};

struct Block {
  uint64_t size = 0, requested = 0;
  bool allocated = false;   // handed out, and its free has not completed
  bool stream_use = false;  // used on another stream (record_stream): its free waits for a synchronize
  bool pending = false;     // freed by the program, waiting for that
};

using PoolId = std::pair<uint64_t, uint64_t>;  // MempoolId_t: {0, 0} the default pool

struct Segment {
  uint64_t size = 0;
  bool small = false;
  PoolId pool{0, 0};  // blocks of a private pool serve only allocations made while it is in use
  std::map<uint64_t, Block> blocks;  // by address; they tile the segment
};

struct Device {
  CUcontext context = nullptr;
  std::map<uint64_t, Segment> segments;  // by address
  Counter requested, allocated, reserved;
};

}  // namespace

// The figures fake_torch_stats() returns: what torch.cuda.memory_stats() calls requested_bytes,
// allocated_bytes and reserved_bytes ("all" pools).
struct FakeTorchStats {
  uint64_t requested_current, requested_peak, allocated_current, allocated_peak, reserved_current, reserved_peak;
};
// The last out-of-memory, as PyTorch hands it to its OOM observers.
struct FakeTorchOom {
  int64_t device;
  uint64_t requested, capacity, free_bytes;
};
// One block of torch.cuda.memory_snapshot(), with its segment.
struct FakeTorchBlock {
  int64_t device;
  uint64_t segment_address, segment_size, segment_stream, address, size, requested_size;
  int64_t small;
  int64_t state;  // 0 inactive, 1 active_allocated, 2 active_pending_free
};

namespace {

// PyTorch's caching allocator in miniature: blocks rounded to 512 bytes carved from segments of
// 2 MiB (requests up to 1 MiB), 20 MiB (up to 10 MiB) or the request rounded to 2 MiB; best fit;
// a free returns the block to the cache, and only empty_cache (or an out-of-memory) gives
// segments back. Every step reports to the attached trackers under the lock, as PyTorch does.
class Caching {
 public:
  bool init() {
    std::lock_guard lock(mutex_);
    if (loaded_) return true;
    std::string error;
    // Through dlopen and dlsym, like libc10_cuda: a preloaded profiler sees every segment.
    if (!gmp::load_driver(gmp::LoadMode::Dlsym, driver_, &error, {.require_fake_hooks = false})) {
      std::fprintf(stderr, "fake libc10_cuda: %s\n", error.c_str());
      return false;
    }
    try {
      gmp::make_primary_context_current(driver_);
    } catch (const gmp::CheckFailure& e) {
      std::fprintf(stderr, "fake libc10_cuda: %s\n", e.what());
      return false;
    }
    loaded_ = true;
    return true;
  }

  void attach(alloc::AllocatorTraceTracker tracker) {
    std::lock_guard lock(mutex_);
    trackers_.push_back(std::move(tracker));
  }

  uint64_t malloc(uint64_t size, int device) {
    std::lock_guard lock(mutex_);
    if (!loaded_ || device < 0 || device >= kMaxDevices || !make_current(device)) return 0;
    Device& d = devices_[device];
    const uint64_t rounded = size < 512 ? 512 : (size + 511) / 512 * 512;
    const bool small = rounded <= kMiB;
    uint64_t address = 0;
    Block* block = best_fit(d, rounded, small, &address);
    if (block == nullptr && !(block = new_segment(device, rounded, small, &address))) {
      size_t free_bytes = 0, total = 0;
      driver_.cuMemGetInfo_v2(&free_bytes, &total);
      record(TraceEntry::OOM, device, free_bytes, size);
      last_oom_ = {device, size, total, free_bytes};
      return 0;
    }
    Segment& seg = segment_of(d, address)->second;
    const uint64_t rest = block->size - rounded;
    if (small ? rest >= 512 : rest > kMiB) {  // PyTorch's rule: keep large remainders only when worth it
      seg.blocks[address + rounded] = Block{rest};
      block->size = rounded;
    }
    block->allocated = true;
    block->requested = size;
    d.allocated.add(block->size);
    d.requested.add(size);
    record(TraceEntry::ALLOC, device, address, size + (wrong_layout_ ? 1 : 0), seg.pool);
    return address;
  }

  void free(uint64_t address) {
    std::lock_guard lock(mutex_);
    for (int device = 0; device < kMaxDevices; ++device) {
      auto seg = segment_of(devices_[device], address);
      if (seg == devices_[device].segments.end()) continue;
      auto b = seg->second.blocks.find(address);
      if (b == seg->second.blocks.end() || !b->second.allocated || b->second.pending) return;
      record(TraceEntry::FREE_REQUESTED, device, address, b->second.requested, seg->second.pool);
      if (b->second.stream_use) {
        b->second.pending = true;
      } else {
        complete_free(device, seg->second, b);
      }
      return;
    }
  }

  void record_stream(uint64_t address) {
    std::lock_guard lock(mutex_);
    for (auto& d : devices_) {
      auto seg = segment_of(d, address);
      if (seg == d.segments.end()) continue;
      if (auto b = seg->second.blocks.find(address); b != seg->second.blocks.end()) b->second.stream_use = true;
    }
  }

  // The other streams' work is done: frees waiting for it complete.
  void synchronize() {
    std::lock_guard lock(mutex_);
    complete_pending();
  }

  void empty_cache() {
    std::lock_guard lock(mutex_);
    complete_pending();
    for (int device = 0; device < kMaxDevices; ++device) release_free_segments(device);
  }

  FakeTorchStats stats(int device) {
    std::lock_guard lock(mutex_);
    if (device < 0 || device >= kMaxDevices) return {};
    const Device& d = devices_[device];
    return {d.requested.current, d.requested.peak,   d.allocated.current,
            d.allocated.peak,    d.reserved.current, d.reserved.peak};
  }

  // torch.cuda.reset_peak_memory_stats(): every peak back to its current value.
  void reset_peaks(int device) {
    std::lock_guard lock(mutex_);
    if (device < 0 || device >= kMaxDevices) return;
    Device& d = devices_[device];
    for (auto* c : {&d.requested, &d.allocated, &d.reserved}) c->peak = c->current;
  }

  FakeTorchOom last_oom() {
    std::lock_guard lock(mutex_);
    return last_oom_;
  }

  size_t snapshot(FakeTorchBlock* out, size_t max) {
    std::lock_guard lock(mutex_);
    size_t n = 0;
    for (int device = 0; device < kMaxDevices; ++device) {
      for (auto& [seg_address, seg] : devices_[device].segments) {
        for (auto& [address, b] : seg.blocks) {
          if (n < max) {
            out[n] = {device,
                      seg_address,
                      seg.size,
                      0,
                      address,
                      b.size,
                      b.allocated ? b.requested : 0,
                      seg.small ? 1 : 0,
                      b.pending     ? 2
                      : b.allocated ? 1
                                    : 0};
          }
          ++n;
        }
      }
    }
    return n;
  }

  // Knobs of the tests (README.md), read when the library loads.
  void set_wrong_layout(bool wrong) { wrong_layout_ = wrong; }
  // The pool new allocations come from, as torch.cuda.graph's private pool during a capture.
  void use_pool(PoolId pool) {
    std::lock_guard lock(mutex_);
    pool_ = pool;
  }

 private:
  void record(TraceEntry::Action action, int device, uint64_t addr, uint64_t size, PoolId pool = {0, 0}) {
    if (trackers_.empty()) return;
    TraceEntry e{action, static_cast<int8_t>(device), addr, nullptr, nullptr, size, pool, 0, "", ""};
    for (const auto& tracker : trackers_) tracker(e);
  }

  bool make_current(int device) {
    Device& d = devices_[device];
    if (d.context == nullptr) {
      CUdevice dev = -1;
      if (driver_.cuDeviceGet(&dev, device) != CUDA_SUCCESS ||
          driver_.cuDevicePrimaryCtxRetain(&d.context, dev) != CUDA_SUCCESS) {
        return false;
      }
    }
    return driver_.cuCtxSetCurrent(d.context) == CUDA_SUCCESS;
  }

  static std::map<uint64_t, Segment>::iterator segment_of(Device& d, uint64_t address) {
    auto it = d.segments.upper_bound(address);
    if (it == d.segments.begin()) return d.segments.end();
    --it;
    return address < it->first + it->second.size ? it : d.segments.end();
  }

  Block* best_fit(Device& d, uint64_t rounded, bool small, uint64_t* address) const {
    Block* best = nullptr;
    for (auto& [_, seg] : d.segments) {
      if (seg.small != small || seg.pool != pool_) continue;
      for (auto& [a, b] : seg.blocks) {
        if (!b.allocated && b.size >= rounded && (best == nullptr || b.size < best->size)) {
          best = &b;
          *address = a;
        }
      }
    }
    return best;
  }

  // A new segment holding one free block; on out-of-memory, the cache is given back and the
  // driver asked once more, as PyTorch does before it raises.
  Block* new_segment(int device, uint64_t rounded, bool small, uint64_t* address) {
    const uint64_t size = small                 ? 2 * kMiB
                          : rounded < 10 * kMiB ? 20 * kMiB
                                                : (rounded + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
    CUdeviceptr p = 0;
    CUresult r = driver_.cuMemAlloc_v2(&p, size);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      release_free_segments(device);
      r = driver_.cuMemAlloc_v2(&p, size);
    }
    if (r != CUDA_SUCCESS) return nullptr;
    Device& d = devices_[device];
    Segment& seg = d.segments[p];
    seg.size = size;
    seg.small = small;
    seg.pool = pool_;
    d.reserved.add(size);
    record(TraceEntry::SEGMENT_ALLOC, device, p, size, pool_);
    *address = p;
    return &(seg.blocks[p] = Block{size});
  }

  void complete_free(int device, Segment& seg, std::map<uint64_t, Block>::iterator b) {
    Device& d = devices_[device];
    record(TraceEntry::FREE_COMPLETED, device, b->first, b->second.requested, seg.pool);
    d.allocated.sub(b->second.size);
    d.requested.sub(b->second.requested);
    b->second = Block{b->second.size};
    // Merge with free neighbours, so a segment whose blocks are all free is one block again.
    if (auto next = std::next(b); next != seg.blocks.end() && !next->second.allocated) {
      b->second.size += next->second.size;
      seg.blocks.erase(next);
    }
    if (b != seg.blocks.begin()) {
      if (auto prev = std::prev(b); !prev->second.allocated) {
        prev->second.size += b->second.size;
        seg.blocks.erase(b);
      }
    }
  }

  void complete_pending() {
    for (int device = 0; device < kMaxDevices; ++device) {
      for (auto& [_, seg] : devices_[device].segments) {
        for (auto b = seg.blocks.begin(); b != seg.blocks.end();) {
          auto next = std::next(b);
          const uint64_t next_address = next != seg.blocks.end() ? next->first : 0;
          if (b->second.pending) {
            complete_free(device, seg, b);
            next = next_address != 0 ? seg.blocks.lower_bound(next_address) : seg.blocks.end();
          }
          b = next;
        }
      }
    }
  }

  void release_free_segments(int device) {
    Device& d = devices_[device];
    for (auto it = d.segments.begin(); it != d.segments.end();) {
      const Segment& seg = it->second;
      if (seg.blocks.size() != 1 || seg.blocks.begin()->second.allocated) {
        ++it;
        continue;
      }
      record(TraceEntry::SEGMENT_FREE, device, it->first, seg.size, seg.pool);
      driver_.cuMemFree_v2(it->first);
      d.reserved.sub(seg.size);
      it = d.segments.erase(it);
    }
  }

  std::mutex mutex_;
  bool loaded_ = false;
  bool wrong_layout_ = false;
  PoolId pool_{0, 0};
  DriverTable driver_;
  std::vector<alloc::AllocatorTraceTracker> trackers_;
  Device devices_[kMaxDevices];
  FakeTorchOom last_oom_{};
};

// Never destroyed: Python may still free tensors while the process exits.
Caching& caching() {
  static auto* c = new Caching;
  return *c;
}

std::string_view env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

bool async_backend() {
  const std::string_view conf =
      !env("PYTORCH_ALLOC_CONF").empty() ? env("PYTORCH_ALLOC_CONF") : env("PYTORCH_CUDA_ALLOC_CONF");
  return conf.find("backend:cudaMallocAsync") != std::string_view::npos;
}

}  // namespace

namespace c10::cuda::CUDACachingAllocator {
namespace Native {
class NativeCachingAllocator final : public CUDAAllocator {
 public:
  void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) override { caching().attach(std::move(tracker)); }
};
}  // namespace Native
namespace CudaMallocAsync {
// PyTorch's refuses trackers; so does this one.
class CudaMallocAsyncAllocator final : public CUDAAllocator {
 public:
  void attachAllocatorTraceTracker(AllocatorTraceTracker) override {}
};
}  // namespace CudaMallocAsync
}  // namespace c10::cuda::CUDACachingAllocator

namespace {

// At load, as PyTorch's BackendStaticInitializer: the backend from PYTORCH_(CUDA_)ALLOC_CONF.
// FAKE_TORCH_ALLOCATOR=async puts a CudaMallocAsyncAllocator there whatever the backend says;
// =none leaves the object null. FAKE_TORCH_LAYOUT=wrong reports each tensor one byte larger.
__attribute__((constructor)) void set_allocator() {
  const std::string_view which = env("FAKE_TORCH_ALLOCATOR");
  alloc::CUDAAllocator* chosen = nullptr;  // never destroyed, as PyTorch's
  if (which == "async" || async_backend())
    chosen = new alloc::CudaMallocAsync::CudaMallocAsyncAllocator;
  else if (which != "none")
    chosen = new alloc::Native::NativeCachingAllocator;
  alloc::allocator.store(chosen);
  caching().set_wrong_layout(env("FAKE_TORCH_LAYOUT") == "wrong");
}

}  // namespace

FAKE_TORCH_API int fake_torch_init() { return caching().init() ? 0 : -1; }
// 0 when out of memory (fake_torch_last_oom says what happened).
FAKE_TORCH_API uint64_t fake_torch_malloc(uint64_t size, int device) { return caching().malloc(size, device); }
FAKE_TORCH_API void fake_torch_free(uint64_t address) { caching().free(address); }
FAKE_TORCH_API void fake_torch_record_stream(uint64_t address) { caching().record_stream(address); }
FAKE_TORCH_API void fake_torch_synchronize() { caching().synchronize(); }
FAKE_TORCH_API void fake_torch_empty_cache() { caching().empty_cache(); }
FAKE_TORCH_API void fake_torch_use_pool(uint64_t first, uint64_t second) { caching().use_pool({first, second}); }
FAKE_TORCH_API void fake_torch_stats(int device, FakeTorchStats* out) { *out = caching().stats(device); }
FAKE_TORCH_API void fake_torch_reset_peaks(int device) { caching().reset_peaks(device); }
FAKE_TORCH_API void fake_torch_last_oom(FakeTorchOom* out) { *out = caching().last_oom(); }
// Fills at most `max` blocks; returns how many there are.
FAKE_TORCH_API size_t fake_torch_snapshot(FakeTorchBlock* out, size_t max) { return caching().snapshot(out, max); }
FAKE_TORCH_API const char* fake_torch_backend() { return async_backend() ? "cudaMallocAsync" : "native"; }
// The virtual-table slot of attachAllocatorTraceTracker, read as PyTorch's layout probe does: a
// pointer to a virtual member is 1 + the slot's byte offset in the Itanium C++ ABI.
FAKE_TORCH_API int fake_torch_attach_slot() {
  auto member = &alloc::CUDAAllocator::attachAllocatorTraceTracker;
  uintptr_t raw = 0;
  std::memcpy(&raw, &member, sizeof raw);
  return static_cast<int>((raw - 1) / sizeof(void*));
}
