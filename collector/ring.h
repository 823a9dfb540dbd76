// The event ring: one bounded single-producer buffer per recording thread, drained by one consumer
// (the collector) in time order.
//
// A producer writes only its own buffer: it claims a position by bumping its own head (no locked
// instruction on a line other threads write), fills the slot in place, stamps it with the event
// clock and publishes it by storing position + 1 into the slot's sequence word. A signal handler
// that records on a thread interrupted mid-record claims the next position of the same buffer;
// the consumer takes each buffer's slots in position order, so it waits for the interrupted one.
//
// Order across threads comes from the timestamps. pop() first reads a horizon H on the event
// clock, then reads every published slot, and hands out, oldest first, only the events stamped
// before H, keeping later ones for the next pass. That keeps every causal order: when thread B's
// event depends on thread A's (A freed an address, then B was given it), A published its record
// before B took its timestamp. If A's record was published when this pass read A's buffer, it is
// handed out no later than B's; if not, A published after the pass began, so B's stamp is past
// H and B waits for a later pass. An event found only after later ones were handed out (stamped
// before H but published after its buffer was read) follows nothing it precedes; it is handed out
// next, its time raised to the last one handed out, so times never go backwards along the trace.
// This needs one clock for all cores: the invariant TSC (clock.h), or CLOCK_MONOTONIC.
//
// A full buffer never drops: its producer waits for the consumer and the wait is counted. A
// producer past half its buffer wakes a sleeping consumer, so a burst rarely has to wait. Memory
// is mmap'ed per buffer and touched only as it is used; a thread's buffer is handed to the next
// new thread when it exits (the events still in it are read where they are).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "clock.h"
#include "event.h"

namespace gmp {

class Ring {
 public:
  // `capacity_pow2` events per thread. Throws std::bad_alloc when not even one buffer can be mapped.
  explicit Ring(size_t capacity_pow2);
  // Every thread that pushed must have exited or stopped pushing (the session's ring lives on).
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  class Buffer;
  // The calling thread's buffer, taken on its first event; nullptr (the event is dropped and
  // counted) when no memory could be mapped for it.
  Buffer* mine();

  // Claims the next position of the calling thread's buffer `b` and returns its slot, for the
  // caller to fill in place (every field: the slot holds an old event) and stamp; publish() then
  // makes it visible. Nothing that can block may run in between.
  static Event* claim(Buffer* b, uint64_t* pos);
  static void publish(Buffer* b, uint64_t pos);
  void push(const Event& e);  // stamps nothing: the event keeps its timestamp

  // Consumer only: copies up to `max` events, oldest first (see above). Returns how many.
  size_t pop(Event* out, size_t max);

  // The consumer's sleep: returns true when woken by wake_consumer(), false after `ns`.
  bool consumer_sleep(uint64_t ns);
  void wake_consumer();
  // The consumer is gone for good (the session's final drain is done): a producer waiting on a
  // full buffer, or later finding one full, overwrites its oldest slot instead of waiting for ever.
  void close();
  // True while a producer is blocked on a full buffer: the consumer should not sleep then.
  bool producers_waiting() const { return waiting_.load(std::memory_order_acquire) != 0; }

  size_t capacity() const { return mask_ + 1; }
  // Events claimed by every thread so far, and events popped. Every event published before a
  // claimed() reading is popped by the time consumed() reaches that reading.
  uint64_t claimed() const;
  uint64_t consumed() const { return consumed_.load(std::memory_order_acquire); }
  uint64_t producer_waits() const { return waits_.load(std::memory_order_relaxed); }
  // Events not recorded because a thread's buffer could not be mapped (address space exhausted).
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t buffers() const { return buffer_count_.load(std::memory_order_relaxed); }

  struct Slot {
    std::atomic<uint64_t> seq;
    Event event;
  };
  class Buffer {
   public:
    // Producer side: written by the owning thread only.
    alignas(64) std::atomic<uint64_t> head{0};
    std::atomic<uint64_t> soft_limit{0};  // claims below it need not look at the consumer
    // Consumer side.
    alignas(64) std::atomic<uint64_t> tail{0};
    std::atomic<bool> owned{false};
    Ring* ring = nullptr;
    Buffer* next = nullptr;  // the ring's list, set before the buffer is published in it
    Slot* slots = nullptr;
    size_t mask = 0;
  };

 private:
  Buffer* attach();
  Buffer* add_buffer(bool owned);  // maps one more buffer into the list; nullptr if it cannot
  static void room_for(Buffer* b, uint64_t pos);
  void wait_for_room(Buffer* b, uint64_t pos);
  bool take(Buffer* b);  // reads b's published events into pending_; true if it read any

  const uint64_t id_;
  size_t mask_;
  size_t bytes_;  // of one buffer's mapping
  std::atomic<Buffer*> buffers_{nullptr};
  std::atomic<size_t> buffer_count_{0};
  std::atomic<uint64_t> waits_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> closed_{false};
  alignas(64) std::atomic<uint32_t> waiting_{0};  // producers blocked in wait_for_room
  std::atomic<uint32_t> room_{0};                  // futex word: bumped when pop() makes room
  alignas(64) std::atomic<uint32_t> consumer_wake_{0};  // futex word of the consumer's sleep
  std::atomic<bool> consumer_asleep_{false};             // so producers wake it only then
  // Consumer only.
  alignas(64) std::atomic<uint64_t> consumed_{0};
  std::vector<Event> pending_;  // read, not yet handed out: [pending_head_, end)
  size_t pending_head_ = 0;
  uint64_t horizon_ = 0;     // the pending events stamped before it may be handed out
  uint64_t last_ticks_ = 0;  // timestamp of the last event handed out
};

// Which buffer of which ring the calling thread holds (ring ids are never reused, so a cache
// left from a destroyed ring or a forked parent's session never matches).
struct RingThreadCache {
  uint64_t ring_id;
  Ring::Buffer* buffer;
};
extern thread_local RingThreadCache t_ring_cache __attribute__((tls_model("initial-exec")));

inline Ring::Buffer* Ring::mine() {
  const RingThreadCache& c = t_ring_cache;
  return c.ring_id == id_ ? c.buffer : attach();
}

// Adds one to a counter that only the calling thread writes (others may read it) and returns the
// old value, in one instruction, so a signal handler that runs on this thread in between sees the
// increment. Without a lock prefix: a locked instruction would also make this thread wait for its
// earlier stores (the previous event, whose cache lines the consumer may hold) to reach the other
// cores, the largest part of an event's cost on a busy ring. ThreadSanitizer builds keep the
// atomic, which it understands.
inline uint64_t bump_own_counter(std::atomic<uint64_t>& counter) {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));
  uint64_t old = 1;
  asm volatile("xaddq %0, %1" : "+r"(old), "+m"(*reinterpret_cast<uint64_t*>(&counter)) : : "memory");
  return old;
#else
  return counter.fetch_add(1, std::memory_order_relaxed);
#endif
}

inline Event* Ring::claim(Buffer* b, uint64_t* pos) {
  const uint64_t p = bump_own_counter(b->head);
  if (p >= b->soft_limit.load(std::memory_order_relaxed)) room_for(b, p);
  *pos = p;
  return &b->slots[p & b->mask].event;
}

inline void Ring::publish(Buffer* b, uint64_t pos) {
  b->slots[pos & b->mask].seq.store(pos + 1, std::memory_order_release);
  // The next slot was last written a whole buffer ago (megabytes) and is out of every cache: its
  // lines are asked for now, for writing, so the next event's stores find them instead of waiting
  // for memory. prefetchw is a no-op on CPUs without it, and never faults.
  const char* next = reinterpret_cast<const char*>(&b->slots[(pos + 1) & b->mask]);
  asm volatile("prefetchw %0" ::"m"(*next));
  asm volatile("prefetchw %0" ::"m"(*(next + sizeof(Slot) - 1)));
}

}  // namespace gmp
