// Process-wide state of the fake driver and the capacity accounting.
#include "fake_state.h"

#include <pthread.h>

namespace fakecuda {

namespace {

State* g_state = nullptr;

void atfork_prepare() { state().mu.lock(); }
void atfork_release() { state().mu.unlock(); }

// Leaky singleton: never destroyed, so a profiler's exit handlers may still call into the
// driver after static destructors have run. Fork-safe: the lock is held across fork().
State* make_state() {
  auto* s = new State();
  pthread_atfork(atfork_prepare, atfork_release, atfork_release);
  return s;
}

}  // namespace

State& state() {
  static State* s = (g_state = make_state());
  return *s;
}

bool valid_device(int dev) {
  return dev >= 0 && static_cast<size_t>(dev) < state().devices.size();
}

bool charge_locked(int dev, size_t bytes) {
  Device& d = state().devices[static_cast<size_t>(dev)];
  if (bytes > d.capacity || d.charged > d.capacity - bytes) return false;
  d.charged += bytes;
  return true;
}

void uncharge_locked(int dev, size_t bytes) {
  Device& d = state().devices[static_cast<size_t>(dev)];
  d.charged = bytes > d.charged ? 0 : d.charged - bytes;
}

}  // namespace fakecuda
