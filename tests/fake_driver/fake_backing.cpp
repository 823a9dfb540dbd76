// Host memory behind linear, pitch, managed, pool and pinned allocations.
//
// Blocks up to 64 MiB come from aligned_alloc(256, round_up(size, 256)); larger ones from an
// anonymous MAP_NORESERVE mapping, so a "device" of many GiB does not need that much host
// memory (nothing is ever written to it). Freed blocks are kept in a per-size LIFO cache and
// handed out again at once to the next request of the same rounded size, from any thread: the
// address a thread just freed is the next address another thread receives, which is exactly
// the reuse race a profiler must order correctly.
//
// All functions here are called with state().mu held.
#include "fake_state.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <vector>

namespace fakecuda {

namespace {

constexpr size_t kMmapThreshold = 64 * MiB;
constexpr size_t kCacheMaxBytes = 4 * GiB;  // virtual; blocks are normally never touched
constexpr size_t kCacheMaxPerClass = 256;

struct Cache {
  std::map<size_t, std::vector<void*>> free_lists;
  size_t bytes = 0;
};

Cache& cache() {
  static Cache* c = new Cache();  // leaky on purpose, see fake_state.cpp
  return *c;
}

}  // namespace

void* backing_alloc(size_t bytes, size_t* backing_size) {
  const size_t rounded = round_up(bytes == 0 ? 1 : bytes, kLinearAlign);
  *backing_size = rounded;
  Cache& c = cache();
  auto it = c.free_lists.find(rounded);
  if (it != c.free_lists.end() && !it->second.empty()) {
    void* p = it->second.back();
    it->second.pop_back();
    c.bytes -= rounded;
    return p;
  }
  if (rounded <= kMmapThreshold) return std::aligned_alloc(kLinearAlign, rounded);
  void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void backing_free(void* p, size_t backing_size) {
  if (p == nullptr) return;
  Cache& c = cache();
  auto& list = c.free_lists[backing_size];
  if (list.size() < kCacheMaxPerClass && c.bytes + backing_size <= kCacheMaxBytes) {
    list.push_back(p);
    c.bytes += backing_size;
    return;
  }
  if (backing_size <= kMmapThreshold) {
    std::free(p);
  } else {
    munmap(p, backing_size);
  }
}

}  // namespace fakecuda
