#include "collector.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "clock.h"
#include "file_io.h"
#include "json_text.h"
#include "log.h"
#include "manifest.h"
#include "python_stack_file.h"
#include "run_directory.h"
#include "seam.h"
#include "summary.h"
#include "summary_builder.h"
#include "trace_format.h"
#include "run_directory_files.h"
#include "records.h"

namespace gmp {
namespace {

constexpr size_t kBatch = 4096;
constexpr size_t kFlushEvents = 4096;  // 256 KiB of trace per write at most
constexpr uint64_t kBusySleepNs = 200'000;      // events are flowing: let a batch build up
constexpr uint64_t kFlushIntervalNs = 2'000'000;  // under load, write the trace at least this often
constexpr uint64_t kIdleShortNs = 1'000'000;
constexpr uint64_t kIdleLongNs = 10'000'000;
constexpr unsigned kIdleRoundsBeforeLong = 200;
constexpr uint64_t kCheckpointDrainNs = 1'000'000'000;  // within the signal flush's 2 s
constexpr uint64_t kStallNs = 100'000'000;

void sleep_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000ull), static_cast<long>(ns % 1'000'000'000ull)};
  nanosleep(&ts, nullptr);
}

// `timeout_ms` from now, saturating: a caller's gpumemprof_sync(UINT64_MAX) means "as long as it
// takes", which a wrapped sum would turn into a deadline already past.
uint64_t deadline_after_ms(uint64_t timeout_ms) {
  const uint64_t now = now_ns();
  return timeout_ms >= (UINT64_MAX - now) / 1'000'000ull ? UINT64_MAX : now + timeout_ms * 1'000'000ull;
}

}  // namespace

Collector::Collector(const Config& config, const ProcessInfo& info, Ring& ring, const DeviceTable& devices)
    : config_(config), info_(info), ring_(ring), devices_(devices),
      categories_(TensorCategories::Use::Live, [](uint32_t stack) { return python_stack_has_file(stack, kKvCacheFile); }),
      oom_(config, info, devices),
      alerts_(config), alert_command_(config.on_alert), sampler_(config.sample_ms, info.pid), watchdog_(config),
      batch_(kBatch) {}

bool Collector::start() {
  auto created = create_run_directory(expand_output_template(config_.output, info_), error_);
  if (!created) return false;
  // Absolute, for messages, the manifest and alerts, and to reach the directory again should the
  // program close our descriptor of it: never to write by.
  run_dir_ = created->path[0] == '/' || info_.cwd.empty() ? created->path : info_.cwd + "/" + created->path;
  if (!dir_.adopt(std::move(created->dir), run_dir_, geteuid()) || !reserve_.take(dir_, error_)) {
    // A disk already full: profiling is off, said once, and nothing is left behind.
    if (error_.empty()) error_ = "cannot open run directory '" + run_dir_ + "': " + std::strerror(errno);
    dir_.close();
    remove_created_dir(*created);
    error_ += " (it was removed)";
    return false;
  }
  oom_.set_run_dir(dir_);
  live_.restart();
  alert_command_.set_output(dir_, kAlertCommandLogFile);
  log::attach_file(dir_, kLogFile);
  write_manifest();
  metrics_.open(config_.metrics_dir, config_.metrics_interval_ms, info_);
  live_file_.open(dir_, config_, info_);
  attribution_.set_file(dir_, kAttributionFile);
  // A trace that cannot be created is said once (TraceWriter); events are still counted.
  trace_.open(dir_,
              make_trace_header(static_cast<uint32_t>(info_.pid), info_.start_realtime_ns, info_.start_monotonic_ns),
              config_.trace_max);
  // The collector must never take the application's signals (SIGTERM, SIGINT, SIGCHLD...).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  thread_ = std::thread([this] {
    run();
    thread_done_.store(true, std::memory_order_release);
  });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
}

size_t Collector::drain_once() {
  const LiveFigures::Pass pass = live_.begin_pass(ring_);
  const size_t n = ring_.pop(batch_.data(), batch_.size());
  if (n > 0) ticks_.refresh();
  for (size_t i = 0; i < n; ++i) process(batch_[i]);
  if (trace_.buffered() >= kFlushEvents) trace_.flush();
  live_.end_pass(pass, ring_, accounting_, categories_);
  if (n > 0) processed_.store(ring_.consumed(), std::memory_order_release);
  live_file_.maybe_publish(now_ns(), accounting_, std::max(lost_.load(std::memory_order_relaxed), ring_.dropped()));
  return n;
}

void Collector::drain_until(uint64_t target, uint64_t deadline_ns, uint64_t stall_ns) {
  // A producer that claimed a slot publishes it within nanoseconds unless it was stopped (a signal
  // handler on that very thread, a thread killed mid-push): then the wait is bounded.
  uint64_t last_progress = now_ns();
  uint64_t missing = 0;
  while (ring_.consumed() < target) {
    const uint64_t now = now_ns();
    if (drain_once() > 0) {
      last_progress = now;
    } else if (now > deadline_ns || now - last_progress > stall_ns) {
      missing = target - ring_.consumed();
      break;
    } else {
      sleep_ns(20'000);
    }
  }
  lost_.store(missing + ring_.dropped(), std::memory_order_relaxed);
  trace_.flush();
}

void Collector::run() {
  // Wake, drain everything, sleep: polling right behind the producers would bounce the ring's
  // cache lines between cores on every event and steal the application's CPU.
  unsigned idle_rounds = 0;
  uint64_t last_flush = now_ns();
  while (!stop_requested_.load(std::memory_order_acquire)) {
    const uint64_t want = checkpoint_requested_.load(std::memory_order_acquire);
    if (want != checkpoint_done_.load(std::memory_order_relaxed)) {
      // Bounded: a process that is ending has stopped recording (session.cpp), so the target is
      // at most a ring's worth of events ahead; a stalled slot is given up after 100 ms.
      drain_until(ring_.claimed(), now_ns() + kCheckpointDrainNs, kStallNs);
      const auto why = static_cast<Ending>(checkpoint_why_.load(std::memory_order_relaxed));
      const int signal = checkpoint_signal_.load(std::memory_order_relaxed);
      if (why == Ending::ExitCall) {
        write_summary(true, 0, kEndedByExitCall, true);
      } else {
        // An exec that fails carries on, with its trace.
        write_summary(false, signal, why == Ending::Signal ? kEndedBySignal : kEndedByExec, why == Ending::Signal);
      }
      checkpoint_done_.store(want, std::memory_order_release);
      continue;
    }
    // Stop at the first short batch: we have caught up. Polling on would read each slot the
    // moment a producer wrote it, moving its cache line between cores on every event.
    size_t drained = 0, n;
    do {
      n = drain_once();
      drained += n;
    } while (n == kBatch);
    const uint64_t now = now_ns();
    if (trace_.buffered() > 0 && (drained == 0 || now - last_flush >= kFlushIntervalNs)) {
      trace_.flush();
      last_flush = now;
    }
    synthesized_.clear();
    sampler_.maybe_sample(now, devices_, synthesized_);
    pools_.maybe_read(now, synthesized_);
    for (const Event& s : synthesized_) add_own(s);
    metrics_.maybe_write(now, accounting_, categories_);
    if (drained > 0) {
      idle_rounds = 0;
      sleep_or_wake(kBusySleepNs);
    } else {
      sleep_or_wake(++idle_rounds < kIdleRoundsBeforeLong ? kIdleShortNs : kIdleLongNs);
    }
  }
}

void Collector::process(Event& e) {
  e.timestamp_ns = ticks_.to_ns(e.ticks);
  if (e.op == Op::DeviceInfo &&
      std::find(device_order_.begin(), device_order_.end(), e.device) == device_order_.end()) {
    device_order_.push_back(e.device);
    write_manifest();
  }
  attribution_.note(e, e.timestamp_ns);  // before the event, so readers find what it refers to
  account(e);
  synthesized_.clear();
  oom_.after(e, accounting_, synthesized_);
  for (const Event& s : synthesized_) add_own(s);
  if (!synthesized_.empty()) trace_.flush();  // a bundle's events reach the disk with it
  evaluate_alerts(e.timestamp_ns);
}

void Collector::add_own(const Event& e) { account(e); }

void Collector::account(const Event& e) {
  // A new segment's checkpoint is the state just before its first event (docs/trace-format.md).
  if (trace_.segment_full()) trace_.start_segment(accounting_.save_checkpoint());
  live_.before(e, accounting_, categories_, ticks_);
  accounting_.apply(e);
  categories_.add(e);
  live_.after(e, accounting_, categories_);
  live_file_.note(e, accounting_);
  metrics_.note(e);
  trace_.append(e);
}

void Collector::evaluate_alerts(uint64_t now_ns) {
  fired_.clear();
  for (const auto& [ordinal, d] : accounting_.devices()) alerts_.evaluate(d, now_ns, fired_);
  for (const Alert& a : fired_) {
    Event e{};
    e.timestamp_ns = a.t_ns;
    AlertRecord{a.type, a.fired, a.allocated, a.reserved, a.threshold_bytes}.to_event(e);
    e.api = Api::Collector;
    e.device = static_cast<int16_t>(a.device);
    add_own(e);
    log::warn("{}", alert_message(a, config_));
    const std::string name = a.device >= 0 && a.device < kMaxDevices ? devices_.entries[a.device].name : "";
    alert_command_.run(a, json_text(alert_json(a, name, info_, run_dir_, config_)));
    if (a.type == AlertType::Critical && a.fired) {
      synthesized_.clear();  // process() is done with it: alerts are evaluated last
      watchdog_.on_critical(a.device, a.t_ns, accounting_, synthesized_);
      for (const Event& c : synthesized_) add_own(c);
    }
  }
}

void Collector::sleep_or_wake(uint64_t ns) {
  // A futex wait rather than a plain sleep, so an out-of-memory or flush request, or a producer
  // waiting on a full ring, is served at once. With producers already waiting, no sleep at all:
  // measured on 2 busy cores, even a sched_yield() here made a small ring 30% slower.
  if (ring_.producers_waiting()) return;
  ring_.consumer_sleep(ns);
}

void Collector::wake() { ring_.wake_consumer(); }

void Collector::wait_processed(uint64_t target, uint64_t timeout_ms) {
  if (finished_.load(std::memory_order_acquire)) return;
  const uint64_t deadline = deadline_after_ms(timeout_ms == UINT64_MAX ? config_.oom_wait_ms : timeout_ms);
  wake();
  while (processed_.load(std::memory_order_acquire) < target && now_ns() < deadline) sleep_ns(100'000);
}

bool Collector::sync(uint64_t timeout_ms) {
  const uint64_t reset = live_.reset_requested();  // before the claims, as in LiveFigures::begin_pass
  const uint64_t target = ring_.claimed();
  const uint64_t deadline = deadline_after_ms(timeout_ms);
  wake();
  while (processed_.load(std::memory_order_acquire) < target || live_.reset_applied() < reset) {
    if (finished_.load(std::memory_order_acquire) || now_ns() >= deadline) return false;
    sleep_ns(20'000);
  }
  return true;
}

void Collector::write_manifest() {
  std::vector<DeviceEntry> devices;
  for (int d : device_order_) devices.push_back(devices_.entry(d));
  const int dirfd = dir_.fd();
  if (dirfd < 0 ||
      !write_file_atomic(dirfd, kManifestFile, json_text(manifest_json(info_, config_, devices), 2) + "\n")) {
    log::error("cannot write {}/{}", run_dir_, kManifestFile);
  }
}

void Collector::write_summary(bool clean_exit, int signal, const char* ended_by, bool final) {
  if (final) {
    trace_.close();  // flushed first: nothing more comes
    attribution_.close();
  }
  SummaryContext ctx;
  ctx.clean_exit = clean_exit;
  ctx.ended_by = ended_by;
  ctx.terminated_by_signal = signal;
  // A process that ended by a signal or replaced its image has no exit status of its own.
  if (const int status = session_exit_status(); status >= 0 && (ended_by == std::string_view(kEndedByExit) ||
                                                                ended_by == std::string_view(kEndedByExitCall))) {
    ctx.exit_status = status;
  }
  ctx.events_lost = lost_.load(std::memory_order_relaxed);
  ctx.producer_waits = ring_.producer_waits();
  ctx.start_monotonic_ns = info_.start_monotonic_ns;
  for (int d : device_order_) ctx.device_names[d] = devices_.entries[static_cast<size_t>(d)].name;
  Summary s = build_summary(accounting_, ctx);
  s.trace_events_written = trace_.written_events();
  s.events.unwritten = trace_.unwritten_events() + trace_.buffered();
  if (trace_.failed()) s.events.trace_error = trace_.error();
  s.trace = Summary::Trace{config_.trace_max, trace_.segments_written(), trace_.segments_dropped(),
                           trace_.events_dropped(), since(trace_.kept_from_ns(), info_.start_monotonic_ns)};
  if (!reserve_.write_file(dir_, kSummaryFile, json_text(to_json(s), 2) + "\n")) {
    log::error("cannot write {}/{}: {}; its figures are not saved", run_dir_, kSummaryFile, std::strerror(errno));
  }
  metrics_.write_final(now_ns(), accounting_, categories_);
  const std::string_view how = ended_by;
  live_file_.finish(how == kEndedBySignal ? live::State::Signalled
                    : how == kEndedByExec ? live::State::Exec
                                          : live::State::Exited,
                    accounting_, ctx.events_lost);
}

bool Collector::checkpoint(Ending why, int signal, uint64_t timeout_ms) {
  if (finished_.load(std::memory_order_acquire)) return true;
  checkpoint_signal_.store(signal, std::memory_order_relaxed);
  checkpoint_why_.store(static_cast<int>(why), std::memory_order_relaxed);
  const uint64_t ticket = checkpoint_requested_.fetch_add(1, std::memory_order_acq_rel) + 1;
  wake();  // FUTEX_WAKE is async-signal-safe: a plain syscall
  const uint64_t deadline = deadline_after_ms(timeout_ms);
  while (checkpoint_done_.load(std::memory_order_acquire) < ticket) {
    if (now_ns() > deadline) return false;
    sleep_ns(200'000);
  }
  return true;
}

bool Collector::stop(uint64_t timeout_ms) {
  if (finished_.exchange(true)) return true;
  const uint64_t deadline = deadline_after_ms(timeout_ms);
  stop_requested_.store(true, std::memory_order_release);
  wake();
  // The loop exits within one idle sleep, unless something it called is stuck (a file system that
  // stopped answering): the process must end all the same, without its summary.
  while (!thread_done_.load(std::memory_order_acquire)) {
    if (now_ns() > deadline) {
      ring_.close();
      thread_.detach();
      log::error("the collector did not stop within {} ms; {}/{} is not written", timeout_ms, run_dir_, kSummaryFile);
      return false;
    }
    sleep_ns(200'000);
  }
  if (thread_.joinable()) thread_.join();
  drain_until(ring_.claimed(), deadline, kStallNs);
  ring_.close();  // a thread still recording past this point must not wait for a consumer
  write_summary(true, 0, kEndedByExit, true);
  return lost_.load() == 0;
}

}  // namespace gmp
