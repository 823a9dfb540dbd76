// Cheap per-event context: the event clock and the kernel thread id (cached per thread; the cache
// is invalidated in a forked child, whose only thread has a new tid).
//
// The event clock is the invariant TSC where the CPU has one (a few ns per read, against ~20 ns
// for clock_gettime in a VM), else CLOCK_MONOTONIC. Events carry raw ticks through the ring; the
// collector converts them to CLOCK_MONOTONIC nanoseconds (TickConverter) before anything else
// sees them, so the trace and every tool only ever see nanoseconds.
#pragma once

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

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

extern bool g_event_clock_is_tsc;  // fixed before the first event is recorded
extern bool g_event_clock_rdtscp;  // the TSC clock reads with rdtscp; fixed with the above

// An event's time, read only once every earlier load of this thread has completed (rdtsc alone
// may run ahead of them): the ring orders threads by these times (ring.h), so a thread that saw
// another's published event must read a later time than that event's. rdtscp waits for exactly
// that and lets later instructions go on; lfence before rdtsc, where rdtscp is missing, also holds
// back everything after it until the read is done.
inline uint64_t event_ticks() {
  if (g_event_clock_is_tsc && g_event_clock_rdtscp) {
    unsigned int cpu;
    return __rdtscp(&cpu);
  }
  _mm_lfence();
  return g_event_clock_is_tsc ? __rdtsc() : now_ns();
}

// The ring's horizon: event_ticks(), and no later load of this thread runs before it.
inline uint64_t horizon_ticks() {
  const uint64_t t = event_ticks();
  _mm_lfence();
  return t;
}

// True when the CPU's TSC runs at a constant rate in every power state (CPUID 0x80000007 EDX[8]).
bool invariant_tsc_available();
// True when the CPU has rdtscp (CPUID 0x80000001 EDX[27]).
bool rdtscp_available();

// Ticks to CLOCK_MONOTONIC ns. The rate is measured against clock_gettime from the session start
// to the latest refresh(), so it only gets more precise as the run goes on.
class TickConverter {
 public:
  explicit TickConverter(bool tsc);
  void refresh();
  uint64_t to_ns(uint64_t ticks) const;

 private:
  bool tsc_;
  uint64_t tsc0_, ns0_;
  double ns_per_tick_ = 1.0;
};

extern std::atomic<uint32_t> g_fork_generation;

inline uint32_t current_tid() {
  struct Cache {
    uint32_t tid;
    uint32_t generation;
  };
  // initial-exec: the shim is preloaded, so its TLS is static and needs no __tls_get_addr call.
  static thread_local Cache cache __attribute__((tls_model("initial-exec"))){0, 0};
  const uint32_t gen = g_fork_generation.load(std::memory_order_relaxed) + 1;
  if (cache.generation != gen) {
    cache.tid = static_cast<uint32_t>(syscall(SYS_gettid));
    cache.generation = gen;
  }
  return cache.tid;
}

}  // namespace gmp
