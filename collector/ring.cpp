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

void Ring::push(const Event& e) {
  const uint64_t pos = head_.fetch_add(1, std::memory_order_relaxed);
  if (pos - tail_.load(std::memory_order_acquire) > mask_) wait_for_room(pos);
  Slot& s = slots_[pos & mask_];
  s.event = e;
  s.seq.store(pos + 1, std::memory_order_release);
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
