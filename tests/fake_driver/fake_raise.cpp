// fakecuda_raise_in: a signal raised inside a driver call, as when one interrupts a thread that is
// inside the real driver (holding its lock). Tests of what a program's signal handler may do from
// there (call exit(), ...) arm it; the entry points that check it call maybe_raise().
#include <signal.h>

#include <atomic>
#include <cstring>

#include "fake_state.h"
#include "fakecuda_hooks.h"

namespace {

// The armed entry point's name (empty: none) and signal. Set by one thread before the call it
// concerns, read by any: a lock would be the driver's own, which the raise must keep held.
char g_entry_point[64];
std::atomic<int> g_signal{0};

}  // namespace

namespace fakecuda {

void maybe_raise(const char* entry_point) {
  const int sig = g_signal.load(std::memory_order_acquire);
  if (sig == 0 || std::strcmp(g_entry_point, entry_point) != 0) return;
  if (g_signal.exchange(0, std::memory_order_acq_rel) == sig) raise(sig);
}

}  // namespace fakecuda

extern "C" void fakecuda_raise_in(const char* entry_point, int sig) {
  g_signal.store(0, std::memory_order_release);
  std::strncpy(g_entry_point, entry_point, sizeof g_entry_point - 1);
  g_signal.store(sig, std::memory_order_release);
}
