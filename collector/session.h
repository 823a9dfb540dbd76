// The profiling session of this process: started lazily at the first memory event (no thread, no
// file before that), finished at exit, re-armed in a forked child, flushed before exec and on a
// default-disposition SIGTERM/SIGINT. The shim's only entry into the collector.
#pragma once

#include <atomic>
#include <cstdint>

#include "clock.h"
#include "event.h"
#include "pool_reader.h"
#include "ring.h"

namespace gmp {

// Driver access the session needs, supplied by the shim (the collector never resolves CUDA).
struct DriverHooks {
  // Name and total memory of a device; false if unknown.
  bool (*device_info)(int device, char* name, int name_len, char* pci_bus_id, int pci_len,
                      uint64_t* total_bytes) = nullptr;
  // Re-reads every known pool's reserved bytes (emitting PoolReserved events) while the driver is
  // still loaded, just before exit.
  void (*refresh_pools)() = nullptr;
  // Reads every known stream-ordered pool, for the collector's passes (pool_reader.h); never from a
  // path that could break a stream capture (the shim reads in relaxed capture mode).
  PoolReadFn read_pools = nullptr;
  // Forgets driver state inherited from the parent (pool handles, cached pointers).
  void (*after_fork_child)() = nullptr;
  // cuDriverGetVersion, or 0.
  int (*driver_version)() = nullptr;
};
void session_set_driver_hooks(const DriverHooks& hooks);

// GPUMEMPROF_ENABLE; false makes the shim a pure pass-through.
bool session_enabled();

class Session;
extern std::atomic<Session*> g_active_session;
Session* session_start();  // slow path of session_record; nullptr when disabled or failed
void session_note_device(Session* s, int device);
// A slot of the calling thread's buffer in the session's ring (Ring::claim); nullptr when the
// thread has no buffer (the event is dropped and counted).
Event* session_claim(Session* s, Ring::Buffer** buffer, uint64_t* pos);

// Records one event: `fill(Event&)` sets the operation's fields on a zeroed event written straight
// into the thread's buffer; time, thread and device are added here. Starts the session on first use.
template <typename Fill>
inline void session_record(int device, Fill&& fill) {
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s == nullptr && (s = session_start()) == nullptr) return;
  if (device >= 0) session_note_device(s, device);
  const uint32_t tid = current_tid();
  Ring::Buffer* buffer;
  uint64_t pos;
  Event* e = session_claim(s, &buffer, &pos);
  if (e == nullptr) return;
  *e = Event{};
  fill(*e);
  e->device = static_cast<int16_t>(device);
  e->thread_id = tid;
  e->timestamp_ns = event_ticks();  // last before publishing: the ring orders threads by it
  Ring::publish(buffer, pos);
}

// The running session, starting it if needed; nullptr when profiling is off.
inline Session* session_get() {
  Session* s = g_active_session.load(std::memory_order_acquire);
  return s != nullptr ? s : session_start();
}

// What allocation events carry besides the call (docs/attribution.md), from the configuration,
// set before the session is published.
extern std::atomic<uint32_t> g_stack_depth;      // GPUMEMPROF_STACKS
extern std::atomic<bool> g_python_stacks;        // GPUMEMPROF_PYTHON_STACKS
extern std::atomic<bool> g_tensor_native_stacks; // GPUMEMPROF_TENSOR_STACKS=all
extern std::atomic<int> g_framework_mode;        // GPUMEMPROF_FRAMEWORK, a FrameworkMode

// True once a session is running in this process (pool refreshes at sync points need no start).
inline bool session_running() { return g_active_session.load(std::memory_order_acquire) != nullptr; }

// After an allocation failed with out-of-memory: returns once the collector has handled every
// event recorded so far (so the OOM bundle is on disk), or after GPUMEMPROF_OOM_WAIT_MS.
void session_wait_for_collector();
// The process is exiting (exit(), main returned): the collector stops reading the driver.
void session_process_exiting();
// gpumemprof_sync: the live figures catch up with every event recorded so far, waiting at most
// `timeout_ms`. False when they did not, or no session of this process is running.
bool session_sync(uint64_t timeout_ms);
// Before a library is unloaded: the collector writes the stacks recorded so far while their
// module is still mapped (docs/attribution.md). Bounded to a fraction of a second.
void session_before_unload();

// Drains and writes summary.json now, keeping the session alive (before exec).
void session_checkpoint();
// The process is about to end without exit handlers (_exit, _Exit, quick_exit): stops recording,
// drains and writes summary.json, bounded. Async-signal-safe (programs call _exit from handlers).
void session_end_by_exit_call();
// The status the process is ending with (main's return value, or what exit(), _exit(), _Exit() or
// quick_exit() got), noted by the shim's exit hooks for summary.json's "exit_status"; -1 until one
// is seen. Async-signal-safe. Kept over fork: a child that ends notes its own.
void session_note_exit_status(int status);
int session_exit_status();
// Final drain and summary.json; later events are passed through unrecorded.
void session_finalize();

}  // namespace gmp
