// The collector thread: drains the ring in order, keeps the accounting, streams the trace, and
// writes manifest.json and summary.json in the run directory.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "accounting.h"
#include "clock.h"
#include "config.h"
#include "device_table.h"
#include "live_figures.h"
#include "live_publisher.h"
#include "metrics_writer.h"
#include "alert_actions.h"
#include "alerts.h"
#include "attribution_writer.h"
#include "nvml_sampler.h"
#include "pool_reader.h"
#include "oom_recorder.h"
#include "owned_dir.h"
#include "process_info.h"
#include "ring.h"
#include "space_reserve.h"
#include "tensor_categories.h"
#include "trace_writer.h"
#include "watchdog.h"

namespace gmp {

// The status session_note_exit_status (seam.h) last noted, for summary.json; -1 until one is seen.
int session_exit_status();

class Collector {
 public:
  Collector(const Config& config, const ProcessInfo& info, Ring& ring, const DeviceTable& devices);

  // Creates the run directory, manifest and trace, then starts the thread. False: error() says why.
  bool start();
  // The shim's reader of stream-ordered pools, called from the collector's thread (before start()).
  void set_pool_reader(PoolReadFn read) { pools_.set(read); }
  // The shim's NVML reader, for the device telemetry (before start()).
  void set_nvml_reader(NvmlReadFn read) { sampler_.set(read); }
  void stop_pool_reads() { pools_.stop(); }
  const std::string& run_dir() const { return run_dir_; }
  const std::string& error() const { return error_; }

  // Why a checkpoint is taken: before exec (the session may carry on if exec fails), or because
  // the process is ending without exit handlers (a fatal signal, _exit and friends).
  enum class Ending : int { Exec, Signal, ExitCall };
  // Drains everything claimed so far, flushes the trace and writes summary.json, waiting at most
  // `timeout_ms`. Async-signal-safe: it only touches atomics and sleeps.
  bool checkpoint(Ending why, int signal, uint64_t timeout_ms);

  // Waits until every event up to ring position `target` is processed (OOM bundles included), at
  // most `timeout_ms` (the configured GPUMEMPROF_OOM_WAIT_MS when UINT64_MAX).
  void wait_processed(uint64_t target, uint64_t timeout_ms = UINT64_MAX);

  // Waits until the live figures include every event claimed so far and the last peak-window
  // reset, at most `timeout_ms` (gpumemprof_sync). False after the timeout or once finished.
  bool sync(uint64_t timeout_ms);

  // Final drain and summary; the thread ends. Waits at most `timeout_ms`.
  bool stop(uint64_t timeout_ms);

 private:
  void run();
  // Drains up to ring position `target`; gives up at `deadline_ns`, or once no event arrived for
  // `stall_ns` (a producer stopped between claim and publish: a thread killed, or the very thread
  // that is waiting on us from a signal handler), counting what is missing as lost.
  void drain_until(uint64_t target, uint64_t deadline_ns, uint64_t stall_ns);
  size_t drain_once();
  void process(Event& e);
  void sleep_or_wake(uint64_t ns);
  void evaluate_alerts(uint64_t now_ns);
  // Events the collector itself adds (OOM bundles and recoveries, alerts, NVML samples): into the
  // accounting and the trace, where they happened.
  void add_own(const Event& e);
  // Into the accounting and the trace: every event, the ring's and the collector's own.
  void account(const Event& e);
  void wake();
  void write_manifest();
  // `final`: the process is ending, so the trace and attribution.jsonl are closed first, giving
  // their descriptors back for summary.json (a program that used up its RLIMIT_NOFILE).
  void write_summary(bool clean_exit, int signal, const char* ended_by, bool final);

  Config config_;
  ProcessInfo info_;
  Ring& ring_;
  const DeviceTable& devices_;
  OwnedDir dir_;  // the run directory: every file of the run is made through it (owned_dir.h)
  TickConverter ticks_{g_event_clock_is_tsc};
  Accounting accounting_;
  // What the tensors are for, as decided so far: the live figures' and the metrics' categories.
  TensorCategories categories_;
  OomRecorder oom_;
  AlertEngine alerts_;
  AlertCommand alert_command_;
  std::vector<Alert> fired_;
  NvmlSampler sampler_;
  PoolReader pools_;
  std::vector<Event> synthesized_;
  TraceWriter trace_;
  AttributionWriter attribution_;
  SpaceReserve reserve_;
  MetricsFile metrics_;
  LiveFigures& live_ = live_figures();
  LivePublisher live_file_;
  Watchdog watchdog_;
  std::string run_dir_;
  std::string error_;
  std::vector<Event> batch_;
  std::vector<int> device_order_;

  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> finished_{false};
  std::atomic<uint64_t> checkpoint_requested_{0};
  std::atomic<uint64_t> checkpoint_done_{0};
  std::atomic<int> checkpoint_signal_{0};
  std::atomic<int> checkpoint_why_{0};
  std::atomic<uint64_t> lost_{0};
  std::atomic<uint64_t> processed_{0};  // ring positions fully handled
  std::atomic<bool> thread_done_{false};  // run() returned: joining cannot wait
  std::thread thread_;
};

}  // namespace gmp
