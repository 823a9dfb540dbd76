#include "seam.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "bounded_call.h"
#include "collector.h"
#include "config.h"
#include "device_table.h"
#include "log.h"
#include "no_cancel.h"
#include "process_info.h"
#include "watchdog.h"

namespace gmp {

std::atomic<uint32_t> g_fork_generation{0};
std::atomic<Session*> g_active_session{nullptr};

class Session {
 public:
  Session(const Config& c, const ProcessInfo& info)
      : ring(std::max<uint64_t>(c.ring_events / kRingShare, kMinThreadEvents)), collector(c, info, ring, devices) {}
  // Each recording thread's buffer holds 1/16 of GPUMEMPROF_RING_EVENTS (65536 events, 4.5 MiB
  // of address space, by default), at least 1024, touched only as used: a thread can run that far
  // ahead of the collector in a burst, and 16 such threads take what the one shared ring took.
  static constexpr uint64_t kRingShare = 16, kMinThreadEvents = 1024;
  DeviceTable devices;
  Ring ring;
  Collector collector;
  int owner_pid = getpid();
};

namespace {

constexpr uint64_t kExitFlushTimeoutMs = 5000;
constexpr uint64_t kSignalFlushTimeoutMs = 2000;
// The driver answers the pools' re-read at exit in microseconds; past this it is locked (see
// at_exit_refresh), and the figures stay as last read.
constexpr uint64_t kExitRefreshTimeoutMs = 250;
// How long an ending waits for a session another thread is starting: creating the run directory
// and its first files takes milliseconds.
constexpr uint64_t kStartWaitMs = 1000;

// kStarting: a thread is inside session_start (holding g_start_mutex).
enum State : int { kIdle, kStarting, kRunning, kDone };
std::atomic<int> g_state{kIdle};
std::atomic<int> g_enabled{-1};
std::mutex* g_start_mutex = new std::mutex;  // leaked: usable during static destruction
DriverHooks g_hooks;
bool g_process_hooks_installed = false;

// Terminating signals whose default action would skip our exit-time flush.
constexpr int kHandledSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT};
constexpr size_t kSignalCount = sizeof kHandledSignals / sizeof kHandledSignals[0];

// The process is ending while another thread starts the session (an exit() right after the first
// allocation): the summary of that session must not be lost, so wait for it, bounded.
// Async-signal-safe: an atomic and sleeps.
void wait_for_start() {
  const uint64_t deadline = now_ns() + kStartWaitMs * 1'000'000ull;
  while (g_state.load(std::memory_order_acquire) == kStarting && now_ns() < deadline) {
    const timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
  }
}

// The process is ending without exit handlers: stop recording (later events would only make the
// flush chase a moving target), then have the collector drain what was recorded and write
// summary.json. Async-signal-safe: atomics, a futex wake and sleeps.
void end_session_now(Collector::Ending why, int sig) {
  wait_for_start();
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s == nullptr || s->owner_pid != getpid()) return;
  g_state.store(kDone, std::memory_order_release);
  g_active_session.store(nullptr, std::memory_order_release);
  s->collector.checkpoint(why, sig, kSignalFlushTimeoutMs);
}

void on_terminating_signal(int sig) {
  const int saved_errno = errno;
  end_session_now(Collector::Ending::Signal, sig);
  // Restore the default action; the signal, blocked while we run, is delivered on return.
  signal(sig, SIG_DFL);
  raise(sig);
  errno = saved_errno;
}

void install_signal_flush() {
  for (size_t i = 0; i < kSignalCount; ++i) {
    struct sigaction current {};
    if (sigaction(kHandledSignals[i], nullptr, &current) != 0) continue;
    // Only a default disposition is ours to take over; an application handler stays untouched.
    if (current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa {};
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(kHandledSignals[i], &sa, nullptr);
  }
}

void at_exit_refresh() {
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s == nullptr || s->owner_pid != getpid()) return;
  s->collector.stop_pool_reads();
  if (g_hooks.refresh_pools == nullptr) return;
  // The thread calling exit() may hold the driver's lock: a signal handler that calls exit() may
  // have interrupted it inside a driver call, and our re-read would wait for that lock forever.
  // So the re-read runs on a thread of its own, and is given up when it does not come back.
  if (!call_bounded(g_hooks.refresh_pools, kExitRefreshTimeoutMs)) {
    log::warn("the driver did not answer within {} ms at exit: pool and graph memory figures stay as last read",
              kExitRefreshTimeoutMs);
  }
}

// Blocks the signals that can arrive at any moment (not the faults, which blocked would kill) on
// this thread while it lives: a handler that calls exit() while the session is half made would
// leave a run directory with nothing in it. Held-off signals are delivered when it goes.
class AsyncSignalsHeld {
 public:
  AsyncSignalsHeld() {
    sigset_t held;
    sigfillset(&held);
    for (int fault : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) sigdelset(&held, fault);
    pthread_sigmask(SIG_BLOCK, &held, &old_);
  }
  ~AsyncSignalsHeld() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  AsyncSignalsHeld(const AsyncSignalsHeld&) = delete;
  AsyncSignalsHeld& operator=(const AsyncSignalsHeld&) = delete;

 private:
  sigset_t old_;
};

void after_fork_in_child() {
  // The child is alone: the parent's collector thread, ring waiters and lock holders are gone.
  // Abandon the parent's session (never touched again) and start afresh at the child's first event.
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
  g_active_session.store(nullptr, std::memory_order_release);
  g_state.store(kIdle, std::memory_order_release);
  new (g_start_mutex) std::mutex;
  log::reset_after_fork();
  if (g_hooks.after_fork_child != nullptr) g_hooks.after_fork_child();
}

void install_process_hooks() {
  if (g_process_hooks_installed) return;  // survives fork: the child inherits them
  g_process_hooks_installed = true;
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  atexit(at_exit_refresh);
}

}  // namespace

void session_set_driver_hooks(const DriverHooks& hooks) {
  g_hooks = hooks;
  set_pool_trimmer(hooks.trim_pool);
}

bool session_enabled() {
  int e = g_enabled.load(std::memory_order_relaxed);
  if (e < 0) {
    const char* v = std::getenv("GPUMEMPROF_ENABLE");
    auto parsed = v ? parse_bool(v) : std::optional<bool>(true);
    e = parsed.value_or(true) ? 1 : 0;  // an invalid value keeps the default (on) and is reported at start
    g_enabled.store(e, std::memory_order_relaxed);
  }
  return e == 1;
}

std::atomic<uint32_t> g_stack_depth{0};
std::atomic<bool> g_python_stacks{false};
std::atomic<bool> g_tensor_native_stacks{false};
std::atomic<bool> g_framework_off{false};
std::atomic<bool> g_categories{true};
std::atomic<bool> g_framework_unverified{false};

Session* session_start() {
  if (g_state.load(std::memory_order_acquire) == kDone || !session_enabled()) return nullptr;
  const NoCancel no_cancel;  // the run directory's files are made on the program's thread
  const AsyncSignalsHeld held;  // released after the lock: a handler may need to start a session too
  std::lock_guard<std::mutex> lock(*g_start_mutex);
  if (Session* s = g_active_session.load(std::memory_order_acquire)) return s;
  if (g_state.load(std::memory_order_acquire) != kIdle) return nullptr;
  g_state.store(kStarting, std::memory_order_release);
  const int saved_errno = errno;
  g_event_clock_is_tsc = invariant_tsc_available();
  g_event_clock_rdtscp = g_event_clock_is_tsc && rdtscp_available();
  Config config = config_from_environment();
  log::configure(config.log_level);
  for (const auto& line : config.errors) log::warn("{}", line);
  Session* s = nullptr;
  try {
    ProcessInfo info = current_process_info();
    if (g_hooks.driver_version != nullptr) info.cuda_driver_version = g_hooks.driver_version();
    s = new Session(config, info);
    s->collector.set_pool_reader(g_hooks.read_pools);
    s->collector.set_nvml_reader(g_hooks.read_nvml);
    if (!s->collector.start()) {
      log::error("{}; profiling is off for this process", s->collector.error());
      s = nullptr;  // leaked on purpose: a half-started collector owns no thread, nothing to free
    }
  } catch (const std::exception& ex) {
    log::error("cannot start: {}; profiling is off for this process", ex.what());
    s = nullptr;
  }
  if (s == nullptr) {
    g_state.store(kDone, std::memory_order_release);
    errno = saved_errno;
    return nullptr;
  }
  install_process_hooks();
  install_signal_flush();
  log::info("recording to {}", s->collector.run_dir());
  g_stack_depth.store(config.stacks, std::memory_order_relaxed);
  g_python_stacks.store(config.python_stacks, std::memory_order_relaxed);
  g_tensor_native_stacks.store(config.tensor_stacks == TensorStacks::All, std::memory_order_relaxed);
  g_framework_off.store(config.framework == FrameworkMode::Off, std::memory_order_relaxed);
  g_categories.store(config.categories, std::memory_order_relaxed);
  g_framework_unverified.store(config.framework == FrameworkMode::Unverified, std::memory_order_relaxed);
  g_state.store(kRunning, std::memory_order_release);
  g_active_session.store(s, std::memory_order_release);
  errno = saved_errno;
  return s;
}

Event* session_claim(Session* s, Ring::Buffer** buffer, uint64_t* pos) {
  Ring::Buffer* b = s->ring.mine();
  if (b == nullptr) return nullptr;
  *buffer = b;
  return Ring::claim(b, pos);
}

void session_note_device(Session* s, int device) {
  if (!s->devices.claim(device)) return;
  auto& entry = s->devices.entries[static_cast<size_t>(device)];
  uint64_t total = 0;
  if (g_hooks.device_info == nullptr ||
      !g_hooks.device_info(device, entry.name, static_cast<int>(sizeof entry.name), entry.pci_bus_id,
                           static_cast<int>(sizeof entry.pci_bus_id), &total)) {
    std::snprintf(entry.name, sizeof entry.name, "device %d", device);
  }
  entry.name[sizeof entry.name - 1] = '\0';
  entry.total_bytes = total;
  Event info{};
  info.ticks = event_ticks();
  info.thread_id = current_tid();
  info.device = static_cast<int16_t>(device);
  info.size = total;
  info.op = Op::DeviceInfo;
  info.api = Api::Collector;
  s->ring.push(info);
}

void session_process_exiting() {
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s != nullptr && s->owner_pid == getpid()) s->collector.stop_pool_reads();
}

void session_wait_for_collector() {
  const NoCancel no_cancel;
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s != nullptr && s->owner_pid == getpid()) s->collector.wait_processed(s->ring.claimed());
}

bool session_sync(uint64_t timeout_ms) {
  const NoCancel no_cancel;
  Session* s = g_active_session.load(std::memory_order_acquire);
  return s != nullptr && s->owner_pid == getpid() && s->collector.sync(timeout_ms);
}

void session_before_unload() {
  constexpr uint64_t kUnloadWaitMs = 200;
  const NoCancel no_cancel;
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s != nullptr && s->owner_pid == getpid() && g_stack_depth.load(std::memory_order_relaxed) != 0) {
    s->collector.wait_processed(s->ring.claimed(), kUnloadWaitMs);
  }
}

void session_checkpoint() {
  const NoCancel no_cancel;
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s != nullptr && s->owner_pid == getpid())
    s->collector.checkpoint(Collector::Ending::Exec, 0, kExitFlushTimeoutMs);
}

namespace {
std::atomic<int> g_exit_status{-1};
}  // namespace

// The low 8 bits: what the parent's wait() reports.
void session_note_exit_status(int status) { g_exit_status.store(status & 0xff, std::memory_order_relaxed); }
int session_exit_status() { return g_exit_status.load(std::memory_order_relaxed); }

void session_end_by_exit_call() {
  const int saved_errno = errno;
  end_session_now(Collector::Ending::ExitCall, 0);
  errno = saved_errno;
}

void session_finalize() {
  const NoCancel no_cancel;
  wait_for_start();
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s == nullptr || s->owner_pid != getpid()) return;
  const int saved_errno = errno;
  g_state.store(kDone, std::memory_order_release);
  g_active_session.store(nullptr, std::memory_order_release);
  if (!s->collector.stop(kExitFlushTimeoutMs)) log::warn("some events could not be drained before exit");
  errno = saved_errno;
}

}  // namespace gmp
