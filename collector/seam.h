// The shim's only door into the collector (docs/architecture.md, "The seam"): recording an event,
// interning a record, noting a device, logging, the session's lifetime, the few reads the C API
// answers from, and DriverHooks, the one table through which the collector calls back into the
// shim. Nothing under shim/ or device_limit/ includes any other collector header, so the
// collector's insides can change without the shim noticing; the collector includes this header
// for the types both sides share (the hooks' readings).
//
// The session behind it: started lazily at the first memory event (no thread, no file before
// that), finished at exit, re-armed in a forked child, flushed before exec and on a
// default-disposition SIGTERM/SIGINT.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "clock.h"  // session_record's inline path: the event clock, the thread id
#include "event.h"
#include "records.h"
#include "ring.h"  // session_record's inline path: claim and publish

struct gpumemprof_device_stats;
struct gpumemprof_counts;
struct gpumemprof_record;

namespace gmp {

// The device ordinals the session's device table and the shim's per-device tables hold (0 .. kMaxDevices-1).
inline constexpr int kMaxDevices = 64;

// --- What the shim supplies: the collector never resolves CUDA or NVML itself ---

// One pool as the driver reports it now: RESERVED_MEM_CURRENT and RESERVED_MEM_HIGH.
struct PoolReading {
  uint64_t pool = 0;
  int device = -1;
  uint64_t reserved = 0, high = 0;
};
// Fills `out` (at most `max`) with the reading of every known pool whose figures changed since they
// were last recorded; returns how many it wrote.
using PoolReadFn = size_t (*)(PoolReading* out, size_t max);
// The pool_reserved event of a reading (api: who read it), the same whichever side read it.
Event pool_reserved_event(const PoolReading& r, Api api);

// Trims one pool to its in-use size through the driver; false when the driver refused. The reserved
// bytes before and after, as the driver says.
using PoolTrimmer = bool (*)(uint64_t pool, uint64_t* reserved_before, uint64_t* reserved_after);

// The sample record's own "NVML did not name the process" (records.h), so the reading goes into the
// trace as it is.
inline constexpr uint64_t kUnknownUsage = SampleRecord::kUnknownProcessUse;
// A device's memory as NVML reports it now, and this process's usage of it (kUnknownUsage when
// NVML does not name the process).
struct NvmlReading {
  uint64_t used = 0, total = 0, process = kUnknownUsage;
};
// NVML's reading of CUDA device `device`, found by its PCI bus id, for the process `pid`; false
// when NVML is not there or has no answer for it.
using NvmlReadFn = bool (*)(int device, const char* pci_bus_id, int pid, NvmlReading* out);

struct DriverHooks {
  // Name, PCI bus id and total memory of a device; false if unknown.
  bool (*device_info)(int device, char* name, int name_len, char* pci_bus_id, int pci_len,
                      uint64_t* total_bytes) = nullptr;
  // Re-reads every known pool's reserved bytes (emitting PoolReserved events) while the driver is
  // still loaded, just before exit.
  void (*refresh_pools)() = nullptr;
  // Reads every known stream-ordered pool, for the collector's passes (pool_reader.h); never from a
  // path that could break a stream capture (the shim reads in relaxed capture mode).
  PoolReadFn read_pools = nullptr;
  // The watchdog's trim (watchdog.h), from the collector's thread.
  PoolTrimmer trim_pool = nullptr;
  // Device telemetry (nvml_sampler.h), from the collector's thread.
  NvmlReadFn read_nvml = nullptr;
  // Forgets driver state inherited from the parent (pool handles, cached pointers).
  void (*after_fork_child)() = nullptr;
  // cuDriverGetVersion, or 0.
  int (*driver_version)() = nullptr;
};
// Once, when the shim is loaded, before any event.
void session_set_driver_hooks(const DriverHooks& hooks);

// --- Recording ---

// GPUMEMPROF_ENABLE; false makes the shim a pure pass-through.
bool session_enabled();

class Session;
extern std::atomic<Session*> g_active_session;
Session* session_start();  // slow path of session_record; nullptr when disabled or failed
// The first event of a device ordinal also records its name and size (DriverHooks::device_info).
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
  e->ticks = event_ticks();  // last before publishing: the ring orders threads by it
  Ring::publish(buffer, pos);
}

// The running session, starting it if needed; nullptr when profiling is off.
inline Session* session_get() {
  Session* s = g_active_session.load(std::memory_order_acquire);
  return s != nullptr ? s : session_start();
}

// True once a session is running in this process (pool refreshes at sync points need no start).
inline bool session_running() { return g_active_session.load(std::memory_order_acquire) != nullptr; }

// What allocation events carry besides the call (docs/attribution.md), and whether the framework
// bridge attaches (docs/framework-bridge.md), from the configuration, set before the session is
// published.
extern std::atomic<uint32_t> g_stack_depth;       // GPUMEMPROF_STACKS
extern std::atomic<bool> g_python_stacks;         // GPUMEMPROF_PYTHON_STACKS
extern std::atomic<bool> g_tensor_native_stacks;  // GPUMEMPROF_TENSOR_STACKS=all
extern std::atomic<bool> g_framework_off;         // GPUMEMPROF_FRAMEWORK=off
extern std::atomic<bool> g_categories;            // GPUMEMPROF_CATEGORIES
extern std::atomic<bool> g_framework_unverified;  // GPUMEMPROF_FRAMEWORK=unverified

// --- Interning: variable-length records become the small ids events carry (0: none, the table
// is full) ---

// A call stack's frames; `hint` (the thread's last stack id) spares the table's hash when equal.
uint32_t intern_stack_frames(const void* frames, uint32_t bytes, uint32_t hint);
// A mark's or range's name.
uint32_t intern_name(const char* name, uint32_t length);
// A Python source location: file NUL function NUL line (4 bytes), as pyframe_entry.h reads it.
uint32_t intern_python_frame(const void* record, uint32_t length);

// --- The profiler's own messages (collector/log.h: stderr, then gpumemprof.log) ---

void log_info(std::string_view line);
void log_warn(std::string_view line);

// --- The session's lifetime, from the shim's process hooks ---

// After an allocation failed with out-of-memory: returns once the collector has handled every
// event recorded so far (so the OOM bundle is on disk), or after GPUMEMPROF_OOM_WAIT_MS.
void session_wait_for_collector();
// The process is exiting (exit(), main returned): the collector stops reading the driver.
void session_process_exiting();
// Before a library is unloaded: the collector writes the stacks recorded so far while their
// module is still mapped (docs/attribution.md). Bounded to a fraction of a second.
void session_before_unload();
// Drains and writes summary.json now, keeping the session alive (before exec).
void session_checkpoint();
// The process is about to end without exit handlers (_exit, _Exit, quick_exit): stops recording,
// drains and writes summary.json, bounded. Async-signal-safe (programs call _exit from handlers).
void session_end_by_exit_call();
// The status the process is ending with (main's return value, or what exit(), _exit(), _Exit() or
// quick_exit() got), noted by the shim's exit hooks for summary.json's "exit_status".
// Async-signal-safe. Kept over fork: a child that ends notes its own.
void session_note_exit_status(int status);
// Final drain and summary.json; later events are passed through unrecorded.
void session_finalize();

// --- What the running process can ask about itself (include/gpumemprof.h, live_figures.h):
// reads that never wait for the collector ---

// gpumemprof_sync: the live figures catch up with every event recorded so far, waiting at most
// `timeout_ms`. False when they did not, or no session of this process is running.
bool session_sync(uint64_t timeout_ms);
// False when the device has no figures yet.
bool live_device_stats(int device, gpumemprof_device_stats& out);
void live_counts(gpumemprof_counts& out);
// Records with a seq above `after_seq`, oldest first, at most `max`.
size_t live_recent(uint64_t after_seq, gpumemprof_record* out, size_t max);
// A new peak window from the events recorded from now on.
void live_reset_peaks();

}  // namespace gmp
