#include "live_publisher.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "clock.h"
#include "file_io.h"
#include "live_registry.h"
#include "log.h"
#include "program_name.h"
#include "records.h"
#include "run_directory_files.h"

namespace gmp {
namespace {

using live::LiveDevice;
using live::LiveFile;
using live::LiveNotice;
using live::LiveTop;

std::string boot_id() {
  const int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[64] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  std::string id(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

int64_t or_none(const std::optional<uint64_t>& v) { return v ? static_cast<int64_t>(*v) : -1; }

// The `n` largest of `all` (largest first; ties: the older first), as the file's entries.
void largest(std::vector<LiveAllocation> all, size_t n, uint8_t level, LiveTop* out,
             int64_t realtime_offset) {
  const auto larger = [](const LiveAllocation& a, const LiveAllocation& b) {
    return a.size != b.size ? a.size > b.size : a.timestamp_ns < b.timestamp_ns;
  };
  n = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(n), all.end(), larger);
  for (size_t i = 0; i < n; ++i) {
    const LiveAllocation& a = all[i];
    LiveTop& t = out[i];
    t = LiveTop{};
    t.address = a.address;
    t.size = a.size;
    t.realtime_ns = static_cast<uint64_t>(static_cast<int64_t>(a.timestamp_ns) + realtime_offset);
    t.stack_id = a.stack_id;
    t.thread_id = a.thread_id;
    t.device = a.device;
    t.kind = static_cast<uint8_t>(a.kind);
    t.api = static_cast<uint8_t>(a.api);
    t.level = level;
  }
}

}  // namespace

void LivePublisher::open(const OwnedDir& run_dir, const Config& config, const ProcessInfo& info) {
  std::fill(std::begin(slots_), std::end(slots_), int8_t{-1});
  if (!config.live) return;
  // Never past RLIMIT_FSIZE: allocating beyond it would raise SIGXFSZ in the program's thread.
  if (file_size_limit() < sizeof(LiveFile)) {
    log::warn("cannot create {}: RLIMIT_FSIZE is below its {} bytes; no live view (gpumemprof top) of this process",
              run_dir.shown(kLiveFile), sizeof(LiveFile));
    return;
  }
  // Exclusive: a run directory is new, so a live.bin already there is not ours to write.
  if (!file_.create(run_dir, kLiveFile, /*exclusive=*/true, /*in_place=*/true)) {
    log::warn("cannot create {}: {}; no live view (gpumemprof top) of this process", run_dir.shown(kLiveFile),
              std::strerror(errno));
    return;
  }
  // All of its disk now: a later write never meets a full disk halfway through a snapshot.
  if (const int err = file_.allocate(sizeof(LiveFile)); err != 0) {
    log::warn("cannot allocate {}: {}; no live view (gpumemprof top) of this process", file_.path(),
              std::strerror(err));
    file_.close();
    ::unlinkat(run_dir.fd(), kLiveFile, 0);
    return;
  }
  f_ = new LiveFile;
  live::init_live_file(*f_);
  realtime_offset_ = static_cast<int64_t>(info.start_realtime_ns) - static_cast<int64_t>(info.start_monotonic_ns);
  const uint64_t start_ticks = live::process_start_ticks(static_cast<uint64_t>(info.pid)).value_or(0);
  f_->pid = static_cast<uint64_t>(info.pid);
  f_->pid_namespace = info.pid_namespace;
  f_->start_ticks = start_ticks;
  f_->start_realtime_ns = info.start_realtime_ns;
  f_->rank = or_none(info.job.rank);
  f_->local_rank = or_none(info.job.local_rank);
  f_->world_size = or_none(info.job.world_size);
  live::set_text(f_->boot_id, boot_id());
  live::set_text(f_->host, info.host);
  live::set_text(f_->program, program_name(info.exe_name, info.argv).display());
  live::set_text(f_->job_id, info.job.job_id);
  if (run_dir.path().size() < sizeof f_->run_dir) live::set_text(f_->run_dir, run_dir.path());
  f_->heartbeat_realtime_ns = realtime_ns();
  const int fd = file_.checked_fd();
  if (fd < 0 || !writer_.start(fd, *f_)) {
    log::warn("cannot write {}: {}; no live view (gpumemprof top) of this process", file_.path(), std::strerror(errno));
    file_.close();
    ::unlinkat(run_dir.fd(), kLiveFile, 0);  // zeros, which a reader would list as unreadable
    delete f_;
    f_ = nullptr;
    return;
  }
  open_ = true;
  std::string error;
  registry_ = live::registry_dir(config.live_registry, geteuid());
  const auto added = registration_.add(registry_, f_->pid, start_ticks, run_dir.path(), error);
  // A registry that is someone else's is always said (it may be a trap); the default one that
  // cannot be made (a read-only /tmp) only in the log, since nobody asked for it.
  if (added == LiveRegistration::Result::Refused || (added != LiveRegistration::Result::Added &&
                                                     !config.live_registry.empty())) {
    log::warn("{}; gpumemprof top finds this process only with --root", error);
  } else if (added != LiveRegistration::Result::Added) {
    log::info("{}; gpumemprof top finds this process only with --root", error);
  }
}

uint64_t LivePublisher::realtime_of(uint64_t monotonic_ns) const {
  return static_cast<uint64_t>(static_cast<int64_t>(monotonic_ns) + realtime_offset_);
}

int LivePublisher::slot_of(int device) {
  if (device < 0 || device >= static_cast<int>(std::size(slots_))) return -1;
  if (slots_[device] >= 0) return slots_[device];
  if (f_->devices_used >= static_cast<uint32_t>(live::kDevices)) return -1;
  const int slot = static_cast<int>(f_->devices_used++);
  slots_[device] = static_cast<int8_t>(slot);
  f_->devices[slot].ordinal = device;
  return slot;
}

void LivePublisher::note(const Event& e, const Accounting& acc) {
  if (!open_) return;
  dirty_ = true;
  if (e.op != Op::Sample && e.op != Op::Mark && e.op != Op::RangePush && e.op != Op::RangePop) top_dirty_ = true;
  const auto found = acc.devices().find(e.device);
  if (found == acc.devices().end()) return;
  const DeviceStats& d = found->second;
  const int slot = slot_of(e.device);
  if (slot < 0) return;
  // The history: the highest level of the second, so that a peak between two publishes is kept.
  // A new second starts from the levels before this event.
  const uint64_t second = realtime_of(e.timestamp_ns) / 1'000'000'000ull;
  if (second > f_->history_latest) roll_history(second);
  levels_[slot] = {d.allocated.current, d.reserved.current};
  if (second == f_->history_latest) {
    live::LiveSecond& s = f_->history[second % live::kHistorySeconds];
    s.allocated_max[slot] = std::max(s.allocated_max[slot], d.allocated.current);
    s.reserved_max[slot] = std::max(s.reserved_max[slot], d.reserved.current);
    if (history_from_ == 0) history_from_ = second;  // the slot changed: the next publish writes it
  }
  uint8_t type = 0;
  LiveNotice n{};
  if (e.op == Op::Alloc && e.result == kOutOfMemory) {
    type = LiveNotice::kOom;
    n.size = e.size;
    n.stack_id = e.stack_id;
    ++ooms_[slot];
  } else if (e.op == Op::Alert) {
    const AlertRecord a = AlertRecord::from_event(e);
    type = a.fired ? LiveNotice::kAlertFired : LiveNotice::kAlertCleared;
    n.alert_type = static_cast<uint8_t>(AlertRecord::type_index(e));
    n.size = a.threshold;
    if (a.fired) ++alerts_[slot];
  } else if (e.op == Op::Cleanup) {
    type = LiveNotice::kCleanup;
    n.size = CleanupRecord::from_event(e).bytes_released;
    ++f_->cleanups;
    f_->cleanup_bytes += n.size;
  } else if (e.op == Op::FrameworkOom) {
    type = LiveNotice::kFrameworkOom;
    n.size = FrameworkOomRecord::from_event(e).requested;
    n.stack_id = e.stack_id;
  }
  if (type == 0) return;
  n.type = type;
  n.device = static_cast<int16_t>(e.device);
  n.realtime_ns = realtime_of(e.timestamp_ns);
  n.allocated = d.allocated.current;
  n.reserved = d.reserved.current;
  f_->notices[f_->notices_total++ % live::kNotices] = n;
}

void LivePublisher::roll_history(uint64_t second) {
  // Seconds with no event held the level they began with; the new second starts from it too.
  const uint64_t first = f_->history_latest == 0 ? second
                         : std::max(f_->history_latest + 1, second >= live::kHistorySeconds
                                                                ? second - live::kHistorySeconds + 1
                                                                : 0);
  for (uint64_t s = first; s <= second; ++s) {
    live::LiveSecond& h = f_->history[s % live::kHistorySeconds];
    h = live::LiveSecond{};
    h.second = s;
    for (uint32_t slot = 0; slot < f_->devices_used; ++slot) {
      h.allocated_max[slot] = levels_[slot].allocated;
      h.reserved_max[slot] = levels_[slot].reserved;
    }
  }
  if (history_from_ == 0) history_from_ = first;
  f_->history_latest = second;
}

void LivePublisher::fill(const Accounting& acc, uint64_t lost) {
  f_->events = acc.events();
  f_->lost = lost;
  f_->oom_failures = acc.oom().failures;
  f_->oom_bundles = acc.oom().bundles_written;
  f_->oom_recovered = acc.oom().recovered;
  std::copy(acc.alerts_fired().begin(), acc.alerts_fired().end(), f_->alerts_fired);
  f_->host_pinned = acc.host_pinned().current;
  f_->host_pinned_peak = acc.host_pinned().peak;
  for (const auto& [ordinal, d] : acc.devices()) {
    const int slot = slot_of(ordinal);
    if (slot < 0) continue;
    LiveDevice& o = f_->devices[slot];
    o.flags = 0;
    o.total_bytes = d.total_bytes;
    o.allocated = d.allocated.current;
    o.allocated_peak = d.allocated.peak;
    o.reserved = d.reserved.current;
    o.reserved_peak = d.reserved.peak;
    o.alloc_count = d.alloc_count;
    o.free_count = d.free_count;
    o.failed_allocs = d.failed_alloc_count;
    const FrameworkStats& fw = d.framework;
    if (fw.attached) {
      o.flags |= LiveDevice::kFramework;
      o.tensors = fw.allocated.current;
      o.tensors_peak = fw.allocated.peak;
      o.framework_reserved = fw.reserved.current;
      o.framework_reserved_peak = fw.reserved.peak;
      o.cached = fw.cached();
      o.outside = fw.outside.current;
      o.outside_peak = fw.outside.peak;
      o.pending_free = fw.pending_free.current;
    }
    if (d.graph_reserved.peak > 0) {
      o.flags |= LiveDevice::kGraphs;
      o.graph_reserved = d.graph_reserved.current;
      o.graph_used = d.graph_used.current;
    }
    if (d.nvml.samples > 0) {
      o.flags |= LiveDevice::kNvml;
      o.nvml_device_used = d.nvml.device_used;
      o.nvml_device_total = d.nvml.device_total;
      o.nvml_process_used = d.nvml.process_known ? d.nvml.process_used : 0;
      o.nvml_process_used_peak = d.nvml.process_known ? d.nvml.process_used_peak : 0;
    }
    o.ooms = ooms_[slot];
    o.alerts_fired = alerts_[slot];
  }
}

void LivePublisher::rebuild_top(const Accounting& acc, uint64_t now_ns) {
  // A walk of every live allocation: at most every kMinTopIntervalNs, and never more than a fiftieth
  // of the collector's time however many there are.
  const uint64_t began = now_ns;
  std::vector<LiveAllocation> driver;
  for (const auto& [ordinal, d] : acc.devices()) {
    std::vector<LiveAllocation> some = acc.live_allocated(ordinal);
    driver.insert(driver.end(), some.begin(), some.end());
  }
  std::fill(std::begin(f_->top), std::end(f_->top), LiveTop{});
  largest(std::move(driver), live::kTopAllocations, LiveTop::kDriver, f_->top, realtime_offset_);
  size_t used = 0;
  while (used < live::kTopAllocations && f_->top[used].size != 0) ++used;
  largest(acc.live_tensors(), live::kTopAllocations, LiveTop::kTensor, f_->top + used, realtime_offset_);
  // The live counts are a walk of the tables too: taken with the largest, at the same pace.
  for (const auto& [ordinal, totals] : acc.live_by_device()) {
    if (const int slot = slot_of(ordinal); slot >= 0) f_->devices[slot].live_allocations = totals.count;
  }
  f_->top_realtime_ns = realtime_of(now_ns);
  top_dirty_ = false;
  last_top_ns_ = now_ns;
  top_cost_ns_ = gmp::now_ns() - began;
}

void LivePublisher::publish(uint64_t now_ns, const Accounting& acc, uint64_t lost) {
  const bool figures = dirty_;
  if (figures) fill(acc, lost);
  f_->heartbeat_realtime_ns = realtime_of(now_ns);
  ++f_->published;
  bool ok = true;
  const int fd = file_.checked_fd();
  if (fd < 0) {
    ok = false;
  } else if (file_size_limit() < sizeof(LiveFile)) {
    // The program lowered RLIMIT_FSIZE below the file: a write past it would raise SIGXFSZ (and
    // the last publish runs on the program's exiting thread, where that signal kills).
    ok = false;
    errno = EFBIG;
  } else {
    writer_.set_fd(fd);
    ok = writer_.publish(*f_, figures, history_from_);  // the history slots not yet written, with them
  }
  if (ok) {
    dirty_ = false;
    history_from_ = 0;
  } else if (!warned_) {
    warned_ = true;  // the next publish tries again; said once
    log::warn("cannot write {}: {}; gpumemprof top shows this process as it was", file_.path(),
              std::strerror(errno));
  }
  last_publish_ns_ = now_ns;
}

void LivePublisher::maybe_publish(uint64_t now_ns, const Accounting& acc, uint64_t lost) {
  if (!open_ || ended_) return;
  if (exec_ns_ != 0) {
    // finish(Exec) was said and we are still here: the exec failed, the program carries on.
    if (now_ns - exec_ns_ < kExecGraceNs) return;
    exec_ns_ = 0;
    f_->state = static_cast<uint32_t>(live::State::Running);
    std::string error;
    registration_.add(registry_, f_->pid, f_->start_ticks, live::text_of(f_->run_dir), error);
    dirty_ = true;
  }
  const uint64_t second = realtime_of(now_ns) / 1'000'000'000ull;
  if (f_->history_latest != 0 && second > f_->history_latest) {
    roll_history(second);
    dirty_ = true;
  }
  if (top_dirty_ && now_ns - last_top_ns_ >= std::max(kMinTopIntervalNs, 50 * top_cost_ns_)) {
    rebuild_top(acc, now_ns);
    dirty_ = true;
  }
  const uint64_t since = now_ns - last_publish_ns_;
  if ((dirty_ && since >= kMinIntervalNs) || since >= live::kHeartbeatNs) publish(now_ns, acc, lost);
}

void LivePublisher::finish(live::State state, const Accounting& acc, uint64_t lost) {
  if (!open_ || ended_) return;
  const uint64_t now = now_ns();
  if (top_dirty_) rebuild_top(acc, now);
  f_->state = static_cast<uint32_t>(state);
  dirty_ = true;
  if (history_from_ == 0) history_from_ = f_->history_latest;
  publish(now, acc, lost);
  if (state == live::State::Exec) {
    exec_ns_ = now;
  } else {
    ended_ = true;
  }
  if (state != live::State::Signalled) registration_.remove();
}

}  // namespace gmp
