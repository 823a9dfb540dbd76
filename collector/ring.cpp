#include "ring.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <new>

namespace gmp {

thread_local RingThreadCache t_ring_cache __attribute__((tls_model("initial-exec"))){0, nullptr};

namespace {

std::atomic<uint64_t> g_next_ring_id{1};

// FUTEX_WAIT on `word` while it equals `seen`, for at most `ns`. True when woken: by a FUTEX_WAKE,
// or by a wake that came between reading `seen` and the sleep (the word moved on: EAGAIN), which a
// caller that read `seen` first must not miss. False after the timeout or a signal.
bool futex_wait(std::atomic<uint32_t>& word, uint32_t seen, uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000ull), static_cast<long>(ns % 1'000'000'000ull)};
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, &ts, nullptr, 0) == 0 ||
         errno == EAGAIN;
}

void futex_wake(std::atomic<uint32_t>& word, int count) {
  word.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

// A thread that exits hands its buffer on; the events still in it are read where they are.
void release_buffer(void* p) {
  auto* b = static_cast<Ring::Buffer*>(p);
  if (t_ring_cache.buffer == b) t_ring_cache = {0, nullptr};
  b->owned.store(false, std::memory_order_release);
}

pthread_key_t buffer_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    pthread_key_create(&k, release_buffer);
    return k;
  }();
  return key;
}

constexpr size_t kHeaderBytes = (sizeof(Ring::Buffer) + 63) / 64 * 64;

}  // namespace

Ring::Ring(size_t capacity_pow2)
    : id_(g_next_ring_id.fetch_add(1, std::memory_order_relaxed)), mask_(capacity_pow2 - 1),
      bytes_(kHeaderBytes + capacity_pow2 * sizeof(Slot)) {
  buffer_key();  // created now, not on a thread's first event (which may be in a signal handler)
  // The first buffer now, for the thread that starts the session: a ring that cannot have even one
  // is an error at start (profiling off, said once), not events dropped one by one.
  if (add_buffer(false) == nullptr) throw std::bad_alloc();
}

Ring::~Ring() {
  for (Buffer* b = buffers_.load(std::memory_order_acquire); b != nullptr;) {
    Buffer* next = b->next;
    b->~Buffer();
    munmap(b, bytes_);
    b = next;
  }
}

Ring::Buffer* Ring::add_buffer(bool owned) {
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  // Slots start zeroed (fresh pages), which no position + 1 ever equals.
  Buffer* b = new (p) Buffer;
  b->owned.store(owned, std::memory_order_relaxed);
  b->ring = this;
  b->slots = reinterpret_cast<Slot*>(static_cast<char*>(p) + kHeaderBytes);
  b->mask = mask_;
  b->next = buffers_.load(std::memory_order_relaxed);
  while (!buffers_.compare_exchange_weak(b->next, b, std::memory_order_release, std::memory_order_relaxed)) {
  }
  buffer_count_.fetch_add(1, std::memory_order_relaxed);
  return b;
}

Ring::Buffer* Ring::attach() {
  Buffer* b = nullptr;
  for (Buffer* it = buffers_.load(std::memory_order_acquire); it != nullptr && b == nullptr; it = it->next) {
    bool expected = false;
    if (!it->owned.load(std::memory_order_relaxed) &&
        it->owned.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      b = it;
    }
  }
  if (b == nullptr && (b = add_buffer(true)) == nullptr) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  b->soft_limit.store(0, std::memory_order_relaxed);  // the first claim looks at the consumer
  pthread_setspecific(buffer_key(), b);
  t_ring_cache = {id_, b};
  return b;
}

void Ring::room_for(Buffer* b, uint64_t pos) {
  Ring* r = b->ring;
  const uint64_t half = (b->mask + 1) / 2;
  uint64_t tail = b->tail.load(std::memory_order_acquire);
  // Half full: have the consumer drain now rather than at the end of its sleep.
  if (pos - tail >= half && r->consumer_asleep_.load(std::memory_order_relaxed)) r->wake_consumer();
  if (pos - tail > b->mask) {
    r->wait_for_room(b, pos);
    tail = b->tail.load(std::memory_order_acquire);
  }
  // Any tail seen + half is a safe limit (the tail only grows), even if a signal handler on this
  // thread stores its own in between.
  b->soft_limit.store(pos - tail >= half ? pos + 1 : tail + half, std::memory_order_relaxed);
}

void Ring::wait_for_room(Buffer* b, uint64_t pos) {
  waits_.fetch_add(1, std::memory_order_relaxed);
  auto full = [&] {
    return pos - b->tail.load(std::memory_order_seq_cst) > b->mask && !closed_.load(std::memory_order_acquire);
  };
  for (unsigned spin = 0; spin < 64 && full(); ++spin) __builtin_ia32_pause();
  while (full()) {
    const uint32_t seen = room_.load(std::memory_order_acquire);
    waiting_.fetch_add(1, std::memory_order_seq_cst);  // before re-checking: pop() reads it after
                                                       // moving a tail, so one of us sees the other
    if (consumer_asleep_.load(std::memory_order_seq_cst)) wake_consumer();
    // The timeout only guards against a lost wake.
    if (full()) futex_wait(room_, seen, 1'000'000);
    waiting_.fetch_sub(1, std::memory_order_release);
  }
}

void Ring::push(const Event& e) {
  Buffer* b = mine();
  if (b == nullptr) return;
  uint64_t pos;
  *claim(b, &pos) = e;
  publish(b, pos);
}

bool Ring::consumer_sleep(uint64_t ns) {
  const uint32_t seen = consumer_wake_.load(std::memory_order_acquire);
  consumer_asleep_.store(true, std::memory_order_seq_cst);
  // A producer that began waiting just before this store did not wake us: do not sleep then.
  const bool woken = !producers_waiting() && futex_wait(consumer_wake_, seen, ns);
  consumer_asleep_.store(false, std::memory_order_relaxed);
  return woken || producers_waiting();
}

void Ring::close() {
  closed_.store(true, std::memory_order_release);
  futex_wake(room_, INT_MAX);
}

void Ring::wake_consumer() { futex_wake(consumer_wake_, 1); }

uint64_t Ring::claimed() const {
  uint64_t n = 0;
  for (Buffer* b = buffers_.load(std::memory_order_acquire); b != nullptr; b = b->next) {
    n += b->head.load(std::memory_order_acquire);
  }
  return n;
}

bool Ring::take(Buffer* b) {
  const uint64_t start = b->tail.load(std::memory_order_relaxed);
  uint64_t t = start;
  for (;; ++t) {
    const Slot& s = b->slots[t & b->mask];
    if (s.seq.load(std::memory_order_acquire) != t + 1) break;
    pending_.push_back(s.event);
  }
  if (t == start) return false;
  b->tail.store(t, std::memory_order_seq_cst);
  return true;
}

size_t Ring::pop(Event* out, size_t max) {
  // Handed-out events leave the front of pending_ only once they are half of it: erasing them on
  // every call would move the rest each time, quadratic in a pass's size.
  if (pending_head_ != 0 && pending_head_ * 2 >= pending_.size()) {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(pending_head_));
    pending_head_ = 0;
  }
  // With a batch already read and due, hand it out under the horizon it was read with: reading
  // more first would let the pending events grow without bound while producers never wait. Read
  // whenever nothing is due (all were stamped after the horizon, say the consumer was descheduled
  // between reading it and reading the buffers): a pass hands out everything read before it.
  const bool due = pending_head_ < pending_.size() && pending_[pending_head_].ticks < horizon_;
  if (pending_.size() - pending_head_ < max || !due) {
    const uint64_t horizon = horizon_ticks();
    const size_t before = pending_.size();
    bool room = false;
    for (Buffer* b = buffers_.load(std::memory_order_acquire); b != nullptr; b = b->next) room |= take(b);
    if (room && waiting_.load(std::memory_order_seq_cst) != 0) futex_wake(room_, INT_MAX);
    if (pending_.size() != before) {
      // The new events are one run per buffer, each in time order but for a signal handler's: sort
      // them (nothing to do for one thread), then merge them with the events still pending.
      const auto by_time = [](const Event& a, const Event& b) { return a.ticks < b.ticks; };
      const auto first = pending_.begin() + static_cast<ptrdiff_t>(pending_head_);
      const auto fresh = pending_.begin() + static_cast<ptrdiff_t>(before);
      if (!std::is_sorted(fresh, pending_.end(), by_time)) std::stable_sort(fresh, pending_.end(), by_time);
      if (first != fresh && by_time(*fresh, *(fresh - 1))) std::inplace_merge(first, fresh, pending_.end(), by_time);
    }
    horizon_ = horizon;
  }
  size_t n = 0;
  while (n < max && pending_head_ < pending_.size() && pending_[pending_head_].ticks < horizon_) {
    Event& e = pending_[pending_head_++];
    e.ticks = std::max(e.ticks, last_ticks_);  // an event found late (see ring.h)
    last_ticks_ = e.ticks;
    out[n++] = e;
  }
  if (n != 0) consumed_.fetch_add(n, std::memory_order_release);
  return n;
}

}  // namespace gmp
