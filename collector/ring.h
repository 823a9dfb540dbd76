// Bounded multi-producer / single-consumer event ring.
//
// A producer claims a position with one fetch_add on `head_` and publishes the slot by storing
// position + 1 into the slot's sequence word. The consumer takes slots strictly in position order,
// so the trace order is the order in which producers claimed positions. Slots start zeroed (the
// memory comes from mmap and is touched only as it is used), which no position+1 ever equals.
// A full ring never drops: the producer waits for the consumer and the wait is counted. A waiting
// producer wakes the consumer and sleeps on a futex that the consumer bumps as it makes room, so a
// small ring under many threads keeps moving instead of every party sleeping on a timer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "event.h"

namespace gmp {

class Ring {
 public:
  explicit Ring(size_t capacity_pow2);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Claims the next position and returns its slot, for the caller to fill in place (every field:
  // the slot holds an old event); publish() then makes it visible. Nothing that can block or
  // record another event may run in between, since the consumer takes positions in order.
  Event* claim(uint64_t* pos);
  void publish(uint64_t pos) { slots_[pos & mask_].seq.store(pos + 1, std::memory_order_release); }
  void push(const Event& e) {
    uint64_t pos;
    *claim(&pos) = e;
    publish(pos);
  }

  // Consumer only: copies up to `max` published events, oldest first. Returns how many.
  size_t pop(Event* out, size_t max);

  // The consumer's sleep: returns true when woken by wake_consumer(), false after `ns`.
  bool consumer_sleep(uint64_t ns);
  void wake_consumer();
  // True while a producer is blocked on a full ring: the consumer should not sleep then.
  bool producers_waiting() const { return waiting_.load(std::memory_order_acquire) != 0; }

  size_t capacity() const { return mask_ + 1; }
  uint64_t claimed() const { return head_.load(std::memory_order_acquire); }
  uint64_t consumed() const { return tail_.load(std::memory_order_acquire); }
  uint64_t producer_waits() const { return waits_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> seq;
    Event event;
  };
  void wait_for_room(uint64_t pos);

  Slot* slots_;
  size_t mask_;
  size_t bytes_;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> waits_{0};
  std::atomic<uint32_t> waiting_{0};       // producers blocked in wait_for_room
  std::atomic<uint32_t> room_{0};          // futex word: bumped when pop() makes room for them
  alignas(64) std::atomic<uint32_t> consumer_wake_{0};  // futex word of the consumer's sleep
  std::atomic<bool> consumer_asleep_{false};             // so waiting producers wake it only then
};

}  // namespace gmp
