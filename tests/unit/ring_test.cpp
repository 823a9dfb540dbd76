#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "clock.h"
#include "ring.h"

namespace gmp {
namespace {

// An event stamped now, as session_record stamps it.
Event make(uint32_t producer, uint64_t seq) {
  Event e{};
  e.thread_id = producer;
  e.address = seq;
  e.timestamp_ns = event_ticks();
  return e;
}

// Pops until `n` events came out (or `spins` empty pops in a row).
std::vector<Event> pop_n(Ring& ring, size_t n, int spins = 1'000'000) {
  std::vector<Event> out(n + 64);
  size_t got = 0;
  for (int idle = 0; got < n && idle < spins;) {
    const size_t k = ring.pop(out.data() + got, out.size() - got);
    got += k;
    idle = k ? 0 : idle + 1;
  }
  out.resize(got);
  return out;
}

TEST(Ring, PopsInPushOrderAcrossWrapAround) {
  Ring ring(1024);
  uint64_t next = 0, expect = 0;
  for (int round = 0; round < 20; ++round) {  // 20 * 300 events wrap the 1024 slots several times
    for (int i = 0; i < 300; ++i) ring.push(make(0, next++));
    for (const Event& e : pop_n(ring, 300)) EXPECT_EQ(e.address, expect++);
  }
  Event out[8];
  EXPECT_EQ(ring.pop(out, 8), 0u);
  EXPECT_EQ(ring.claimed(), 6000u);
  EXPECT_EQ(ring.consumed(), 6000u);
  EXPECT_EQ(ring.producer_waits(), 0u);
  EXPECT_EQ(ring.buffers(), 1u);
}

TEST(Ring, FullBufferMakesProducerWaitAndLosesNothing) {
  Ring ring(1024);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (uint64_t i = 0; i < 5000; ++i) ring.push(make(1, i));
    done = true;
  });
  // Let the producer fill its buffer before draining: it must block, not drop.
  while (ring.claimed() < 1025) std::this_thread::yield();
  EXPECT_FALSE(done.load());
  uint64_t expect = 0;
  for (const Event& e : pop_n(ring, 5000)) ASSERT_EQ(e.address, expect++);
  EXPECT_EQ(expect, 5000u);
  producer.join();
  EXPECT_GE(ring.producer_waits(), 1u);
}

TEST(Ring, ManyProducersEveryEventOnceInPerProducerAndTimeOrder) {
  constexpr int kProducers = 8;
  constexpr uint64_t kPerProducer = 100'000;
  Ring ring(1024);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&ring, p] {
      for (uint64_t i = 0; i < kPerProducer; ++i) ring.push(make(static_cast<uint32_t>(p), i));
    });
  }
  std::vector<uint64_t> next(kProducers, 0);
  uint64_t last = 0;
  for (const Event& e : pop_n(ring, kProducers * kPerProducer)) {
    ASSERT_EQ(e.address, next[e.thread_id]++) << "producer " << e.thread_id;
    ASSERT_GE(e.timestamp_ns, last);
    last = e.timestamp_ns;
  }
  for (auto& t : producers) t.join();
  for (auto n : next) EXPECT_EQ(n, kPerProducer);
  Event out[8];
  EXPECT_EQ(ring.pop(out, 8), 0u);
  EXPECT_LE(ring.buffers(), static_cast<size_t>(kProducers));
}

// What the shim's wrappers rely on: thread A records the release of an address before handing it
// on (the driver's free), thread B records the allocation after receiving it. Four threads pass
// addresses around while the consumer pops concurrently: every release comes out before the
// allocation that received its address.
TEST(Ring, CausallyRelatedEventsOfDifferentThreadsComeOutInOrder) {
  constexpr int kThreads = 4;
  constexpr uint64_t kHandOffs = 2'000;
  Ring ring(1024);
  std::atomic<uint64_t> baton{0};  // hand-off number n is held by thread n % kThreads
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t n = static_cast<uint64_t>(t); n < kHandOffs; n += kThreads) {
        while (baton.load(std::memory_order_acquire) != n) std::this_thread::yield();
        Event alloc = make(static_cast<uint32_t>(t), n);
        alloc.op = Op::Alloc;
        ring.push(alloc);
        Event release = make(static_cast<uint32_t>(t), n);
        release.op = Op::Free;
        ring.push(release);
        baton.store(n + 1, std::memory_order_release);
      }
    });
  }
  std::vector<int> state(kHandOffs, 0);  // 0 nothing, 1 allocated, 2 released
  uint64_t handed_on = 0;
  for (const Event& e : pop_n(ring, 2 * kHandOffs)) {
    if (e.op == Op::Alloc) {
      ASSERT_EQ(e.address, handed_on) << "allocation before the previous holder's release";
      state[e.address] = 1;
    } else {
      ASSERT_EQ(state[e.address], 1);
      state[e.address] = 2;
      ++handed_on;
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(handed_on, kHandOffs);
}

TEST(Ring, EventStampedAfterTheHorizonWaitsForALaterPass) {
  Ring ring(1024);
  Event late = make(0, 1);
  late.timestamp_ns = event_ticks() + (g_event_clock_is_tsc ? 1ull << 40 : 1ull << 62);
  ring.push(late);
  Event out[4];
  EXPECT_EQ(ring.pop(out, 4), 0u);  // read, kept: stamped after this pass's horizon
  EXPECT_EQ(ring.consumed(), 0u);
  ring.push(make(0, 2));  // the same thread, stamped earlier than `late`, also waits behind it
  EXPECT_EQ(ring.pop(out, 4), 1u);
  EXPECT_EQ(out[0].address, 2u);
}

// A full batch read but not yet due (stamped after the horizon it was read with: the consumer was
// descheduled between the two) must not stop the consumer from reading a later horizon.
TEST(Ring, FullBatchStampedAfterTheHorizonComesOutOnceDue) {
  Ring ring(1024);
  const uint64_t ahead = event_ticks() + 20'000'000 * (g_event_clock_is_tsc ? 5 : 1);  // about 20 ms
  for (uint64_t i = 0; i < 3; ++i) {
    Event e = make(0, i);
    e.timestamp_ns = ahead + i;
    ring.push(e);
  }
  Event out[2];
  EXPECT_EQ(ring.pop(out, 2), 0u);
  while (event_ticks() <= ahead + 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(ring.pop(out, 2), 2u);
  EXPECT_EQ(out[0].address, 0u);
  ASSERT_EQ(ring.pop(out, 2), 1u);
  EXPECT_EQ(out[0].address, 2u);
}

// A record claimed but published only after another thread's later event was handed out (the
// thread was descheduled between its timestamp and its publish): handed out next, its time raised
// to the last one handed out, so times never go backwards.
TEST(Ring, EventFoundLateIsHandedOutNextWithItsTimeRaised) {
  Ring ring(1024);
  Ring::Buffer* b = ring.mine();
  uint64_t pos;
  Event* slow = Ring::claim(b, &pos);
  *slow = make(0, 1);
  const uint64_t slow_time = slow->timestamp_ns;
  std::thread([&] { ring.push(make(1, 2)); }).join();
  Event out[4];
  ASSERT_EQ(ring.pop(out, 4), 1u);
  EXPECT_EQ(out[0].address, 2u);
  const uint64_t later = out[0].timestamp_ns;
  ASSERT_GT(later, slow_time);
  Ring::publish(b, pos);
  ASSERT_EQ(ring.pop(out, 4), 1u);
  EXPECT_EQ(out[0].address, 1u);
  EXPECT_EQ(out[0].timestamp_ns, later);
}

Ring* g_signal_ring = nullptr;
void record_from_handler(int) { g_signal_ring->push(make(0, 99)); }

// A signal handler recording on a thread interrupted between claim and publish takes the next
// slot of the same buffer; the consumer waits for the interrupted record, and loses neither.
TEST(Ring, SignalHandlerRecordingMidRecordTakesTheNextSlot) {
  Ring ring(1024);
  g_signal_ring = &ring;
  struct sigaction sa {}, old {};
  sa.sa_handler = record_from_handler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  Ring::Buffer* b = ring.mine();
  uint64_t pos;
  Event* outer = Ring::claim(b, &pos);
  raise(SIGUSR1);  // delivered before raise returns, on this thread
  Event out[4];
  EXPECT_EQ(ring.pop(out, 4), 0u);  // the handler's event waits behind the unpublished slot
  *outer = make(0, 1);
  Ring::publish(b, pos);
  const std::vector<Event> got = pop_n(ring, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].address, 99u);  // stamped first
  EXPECT_EQ(got[1].address, 1u);
  sigaction(SIGUSR1, &old, nullptr);
  g_signal_ring = nullptr;
}

// A thread that exits leaves its events to be read where they are, and its buffer to the next
// thread: thousands of short-lived threads use one buffer's memory, not thousands.
TEST(Ring, ExitedThreadsEventsAreDrainedAndItsBufferReused) {
  Ring ring(1024);
  uint64_t expect = 0;
  for (uint64_t t = 0; t < 2000; ++t) {
    std::thread([&] { ring.push(make(static_cast<uint32_t>(t), t)); }).join();
    if (t % 1000 == 999) {  // the one buffer holds 1024 events
      for (const Event& e : pop_n(ring, 1000)) EXPECT_EQ(e.address, expect++);
    }
  }
  EXPECT_EQ(expect, 2000u);
  EXPECT_EQ(ring.buffers(), 1u);
}

// A thread's cached buffer belongs to one ring: a new ring (a forked child's new session, a ring
// at a destroyed one's address) gets a buffer of its own.
TEST(Ring, ThreadBufferBelongsToOneRing) {
  auto a = std::make_unique<Ring>(1024);
  a->push(make(0, 1));
  a.reset();
  Ring b(1024);
  b.push(make(0, 2));
  const std::vector<Event> got = pop_n(b, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].address, 2u);
  EXPECT_EQ(b.claimed(), 1u);
}

// session_wait_for_collector's contract: once consumed() reaches a claimed() reading taken after
// an event was published, that event has been handed out, whatever other threads record.
TEST(Ring, ConsumedReachingAClaimedReadingCoversEveryEventPublishedBefore) {
  Ring ring(1024);
  std::atomic<bool> stop{false}, stop_noise{false};
  std::thread noise([&] {
    for (uint64_t i = 0; !stop_noise.load(std::memory_order_relaxed); ++i) ring.push(make(1, i));
  });
  std::atomic<bool> seen{false};
  std::atomic<uint64_t> processed{0};  // as the collector's: stored once a batch is handled
  std::thread consumer([&] {
    Event buf[256];
    while (!stop.load(std::memory_order_relaxed)) {
      const size_t n = ring.pop(buf, 256);
      for (size_t i = 0; i < n; ++i) {
        if (buf[i].thread_id == 0) seen.store(true, std::memory_order_relaxed);
      }
      processed.store(ring.consumed(), std::memory_order_release);
    }
  });
  ring.push(make(0, 7));
  const uint64_t target = ring.claimed();
  while (processed.load(std::memory_order_acquire) < target) std::this_thread::yield();
  EXPECT_TRUE(seen.load(std::memory_order_acquire));
  // The consumer drains until the noise has stopped: noise may be waiting for room in its buffer.
  stop_noise = true;
  noise.join();
  stop = true;
  consumer.join();
}

// Once the consumer is gone for good, a producer on a full buffer carries on instead of waiting.
TEST(Ring, AClosedRingNeverKeepsAProducerWaiting) {
  Ring ring(1024);
  std::thread producer([&] {
    for (uint64_t i = 0; i < 1024; ++i) ring.push(make(0, i));
    ring.push(make(0, 1024));  // the buffer is full: waits until close()
    for (uint64_t i = 0; i < 4096; ++i) ring.push(make(0, i));
  });
  while (ring.producers_waiting() == false) std::this_thread::yield();
  ring.close();
  producer.join();
  EXPECT_EQ(ring.claimed(), 1025u + 4096u);
}

TEST(Ring, ProducerBlockedOnAFullBufferWakesTheSleepingConsumer) {
  Ring ring(1024);
  std::thread producer([&] {
    for (uint64_t i = 0; i < 1025; ++i) ring.push(make(1, i));
  });
  // A consumer that would sleep for a minute is woken by the producer (past half its buffer, and
  // again while it waits on the full buffer, so a wake sent before the sleep began is not lost).
  EXPECT_TRUE(ring.consumer_sleep(60'000'000'000ull));
  const std::vector<Event> got = pop_n(ring, 1025);
  producer.join();
  ASSERT_EQ(got.size(), 1025u);
  EXPECT_EQ(got[1024].address, 1024u);
  EXPECT_FALSE(ring.producers_waiting());
}

TEST(Ring, ConsumerSleepTimesOutWithoutProducers) {
  Ring ring(1024);
  EXPECT_FALSE(ring.consumer_sleep(1'000'000));
  ring.wake_consumer();  // a wake with nobody asleep is harmless
}

}  // namespace
}  // namespace gmp
