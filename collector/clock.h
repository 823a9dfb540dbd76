// Cheap per-event context: monotonic time and the kernel thread id (cached per thread; the cache
// is invalidated in a forked child, whose only thread has a new tid).
#pragma once

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace gmp {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

extern std::atomic<uint32_t> g_fork_generation;

inline uint32_t current_tid() {
  struct Cache {
    uint32_t tid;
    uint32_t generation;
  };
  static thread_local Cache cache{0, 0};
  const uint32_t gen = g_fork_generation.load(std::memory_order_relaxed) + 1;
  if (cache.generation != gen) {
    cache.tid = static_cast<uint32_t>(syscall(SYS_gettid));
    cache.generation = gen;
  }
  return cache.tid;
}

}  // namespace gmp
