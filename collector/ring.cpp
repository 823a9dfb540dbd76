#include "ring.h"

#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include <new>

namespace gmp {

Ring::Ring(size_t capacity_pow2) : mask_(capacity_pow2 - 1), bytes_(capacity_pow2 * sizeof(Slot)) {
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  slots_ = static_cast<Slot*>(p);
}

Ring::~Ring() { munmap(slots_, bytes_); }

Event* Ring::claim(uint64_t* pos) {
  const uint64_t p = head_.fetch_add(1, std::memory_order_relaxed);
  if (p - tail_.load(std::memory_order_acquire) > mask_) wait_for_room(p);
  // A slot is last touched a whole lap ago, so writing it misses to memory, and the next locked
  // instruction (our fetch_add, a mutex in the driver) would wait for that store. Requesting the
  // next slot's lines now lets the miss overlap the application's work instead.
  const char* next = reinterpret_cast<const char*>(&slots_[(p + 1) & mask_]);
  __builtin_prefetch(next, 1, 3);
  __builtin_prefetch(next + sizeof(Slot) - 1, 1, 3);
  *pos = p;
  return &slots_[p & mask_].event;
}

void Ring::wait_for_room(uint64_t pos) {
  waits_.fetch_add(1, std::memory_order_relaxed);
  for (unsigned spin = 0; pos - tail_.load(std::memory_order_acquire) > mask_; ++spin) {
    if (spin < 64) {
      __builtin_ia32_pause();
    } else if (spin < 128) {
      sched_yield();
    } else {
      timespec ts{0, 50'000};
      nanosleep(&ts, nullptr);
    }
  }
}

size_t Ring::pop(Event* out, size_t max) {
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  size_t n = 0;
  for (; n < max; ++n) {
    Slot& s = slots_[(tail + n) & mask_];
    if (s.seq.load(std::memory_order_acquire) != tail + n + 1) break;
    out[n] = s.event;
  }
  if (n) tail_.store(tail + n, std::memory_order_release);
  return n;
}

}  // namespace gmp
