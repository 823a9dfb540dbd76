#include "ring.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

#include <new>

namespace gmp {
namespace {

// FUTEX_WAIT on `word` while it equals `seen`, for at most `ns`; true when woken.
bool futex_wait(std::atomic<uint32_t>& word, uint32_t seen, uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000ull), static_cast<long>(ns % 1'000'000'000ull)};
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, &ts, nullptr, 0) == 0;
}

void futex_wake(std::atomic<uint32_t>& word, int count) {
  word.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

}  // namespace

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
  auto full = [&] { return pos - tail_.load(std::memory_order_seq_cst) > mask_; };
  for (unsigned spin = 0; spin < 64 && full(); ++spin) __builtin_ia32_pause();
  while (full()) {
    const uint32_t seen = room_.load(std::memory_order_acquire);
    waiting_.fetch_add(1, std::memory_order_seq_cst);  // before re-checking: pop() reads it after
                                                       // moving the tail, so one of us sees the other
    if (consumer_asleep_.load(std::memory_order_seq_cst)) wake_consumer();  // a full ring ahead of it
    // The timeout only guards against a consumer that stopped (a forked child's copy of a ring).
    if (full()) futex_wait(room_, seen, 1'000'000);
    waiting_.fetch_sub(1, std::memory_order_release);
  }
}

bool Ring::consumer_sleep(uint64_t ns) {
  const uint32_t seen = consumer_wake_.load(std::memory_order_acquire);
  consumer_asleep_.store(true, std::memory_order_seq_cst);
  // A producer that began waiting just before this store did not wake us: do not sleep then.
  const bool woken = !producers_waiting() && futex_wait(consumer_wake_, seen, ns);
  consumer_asleep_.store(false, std::memory_order_relaxed);
  return woken || producers_waiting();
}

void Ring::wake_consumer() { futex_wake(consumer_wake_, 1); }

size_t Ring::pop(Event* out, size_t max) {
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  size_t n = 0;
  for (; n < max; ++n) {
    Slot& s = slots_[(tail + n) & mask_];
    if (s.seq.load(std::memory_order_acquire) != tail + n + 1) break;
    out[n] = s.event;
  }
  if (n) {
    tail_.store(tail + n, std::memory_order_seq_cst);
    if (waiting_.load(std::memory_order_seq_cst) != 0) futex_wake(room_, INT_MAX);
  }
  return n;
}

}  // namespace gmp
