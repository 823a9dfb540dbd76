#include "bounded_call.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>

#include "clock.h"

namespace gmp {
namespace {

// Shared by the caller and the thread; the last of the two to let go frees it, since a caller that
// gave up must not wait for the thread to finish.
struct Call {
  void (*fn)();
  std::atomic<bool> done{false};
  std::atomic<int> holders{2};
};

void let_go(Call* c) {
  if (c->holders.fetch_sub(1, std::memory_order_acq_rel) == 1) delete c;
}

void* run(void* arg) {
  auto* c = static_cast<Call*>(arg);
  c->fn();
  c->done.store(true, std::memory_order_release);
  let_go(c);
  return nullptr;
}

}  // namespace

bool call_bounded(void (*fn)(), uint64_t timeout_ms) {
  auto* c = new Call{fn};
  // Blocked in the thread, so that the program's signals keep going to its own threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const int err = pthread_create(&thread, &attr, run, c);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err != 0) {
    delete c;
    return false;
  }
  const uint64_t deadline = now_ns() + timeout_ms * 1'000'000ull;
  bool done = false;
  while (!(done = c->done.load(std::memory_order_acquire)) && now_ns() < deadline) {
    const timespec pause{0, 100'000};
    nanosleep(&pause, nullptr);
  }
  let_go(c);
  return done;
}

}  // namespace gmp
