#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "ring.h"

namespace gmp {
namespace {

Event make(uint32_t producer, uint64_t seq) {
  Event e{};
  e.thread_id = producer;
  e.address = seq;
  return e;
}

TEST(Ring, PopsInPushOrderAcrossWrapAround) {
  Ring ring(1024);
  Event out[300];
  uint64_t next = 0, expect = 0;
  for (int round = 0; round < 20; ++round) {  // 20 * 300 events wrap the 1024 slots several times
    for (int i = 0; i < 300; ++i) ring.push(make(0, next++));
    size_t n = ring.pop(out, 300);
    ASSERT_EQ(n, 300u);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(out[i].address, expect++);
  }
  EXPECT_EQ(ring.pop(out, 300), 0u);
  EXPECT_EQ(ring.claimed(), 6000u);
  EXPECT_EQ(ring.consumed(), 6000u);
  EXPECT_EQ(ring.producer_waits(), 0u);
}

TEST(Ring, FullRingMakesProducerWaitAndLosesNothing) {
  Ring ring(1024);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (uint64_t i = 0; i < 5000; ++i) ring.push(make(1, i));
    done = true;
  });
  // Let the producer fill the ring before draining: it must block, not drop.
  while (ring.claimed() < 1025) std::this_thread::yield();
  EXPECT_FALSE(done.load());
  std::vector<Event> buf(64);
  uint64_t expect = 0;
  while (expect < 5000) {
    size_t n = ring.pop(buf.data(), buf.size());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(buf[i].address, expect++);
  }
  producer.join();
  EXPECT_GE(ring.producer_waits(), 1u);
}

TEST(Ring, ManyProducersEveryEventOnceInPerProducerOrder) {
  constexpr int kProducers = 8;
  constexpr uint64_t kPerProducer = 100'000;
  Ring ring(4096);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&ring, p] {
      for (uint64_t i = 0; i < kPerProducer; ++i) ring.push(make(static_cast<uint32_t>(p), i));
    });
  }
  std::vector<uint64_t> next(kProducers, 0);
  std::vector<Event> buf(512);
  uint64_t total = 0;
  while (total < kProducers * kPerProducer) {
    size_t n = ring.pop(buf.data(), buf.size());
    for (size_t i = 0; i < n; ++i) {
      auto& expected = next[buf[i].thread_id];
      ASSERT_EQ(buf[i].address, expected) << "producer " << buf[i].thread_id;
      ++expected;
    }
    total += n;
  }
  for (auto& t : producers) t.join();
  for (auto n : next) EXPECT_EQ(n, kPerProducer);
  EXPECT_EQ(ring.pop(buf.data(), buf.size()), 0u);
}

TEST(Ring, ProducerBlockedOnAFullRingWakesTheSleepingConsumer) {
  Ring ring(1024);
  for (uint64_t i = 0; i < 1024; ++i) ring.push(make(0, i));
  EXPECT_FALSE(ring.producers_waiting());
  std::thread producer([&] { ring.push(make(1, 1024)); });
  // A consumer that would sleep for a minute is woken by the blocked producer (which repeats its
  // wake while it waits, so a wake sent before the sleep began is not lost for long).
  EXPECT_TRUE(ring.consumer_sleep(60'000'000'000ull));
  while (!ring.producers_waiting()) std::this_thread::yield();
  std::vector<Event> buf(2048);
  size_t n = ring.pop(buf.data(), buf.size());
  producer.join();
  n += ring.pop(buf.data() + n, buf.size() - n);
  ASSERT_EQ(n, 1025u);
  EXPECT_EQ(buf[1024].address, 1024u);
  EXPECT_FALSE(ring.producers_waiting());
  EXPECT_EQ(ring.producer_waits(), 1u);
}

TEST(Ring, ConsumerSleepTimesOutWithoutProducers) {
  Ring ring(1024);
  EXPECT_FALSE(ring.consumer_sleep(1'000'000));
  ring.wake_consumer();  // a wake with nobody asleep is harmless
}

}  // namespace
}  // namespace gmp
