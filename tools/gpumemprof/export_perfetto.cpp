// perfetto: Chrome trace-event JSON, which ui.perfetto.dev (and chrome://tracing) opens.
//
// One process (the profiled one) holds every track:
//   "GPU N memory"   counter, args allocated and reserved: Perfetto draws one track per argument
//                    ("GPU N memory allocated", "GPU N memory reserved"); a point each time either
//                    changes, and a zero at the device's first event so the track starts at zero
//   "GPU N PyTorch"  counter, args allocated (tensors) and reserved (the caching allocator's segments),
//                    when the framework bridge delivered the device's allocator (docs/framework-bridge.md)
//   "GPU N tensors by category"  counter, one arg per tensor category that ever held memory on the
//                    device (parameters, gradients, optimizer_state, ...; docs/framework-bridge.md
//                    §Categories), decided from a replay of the whole trace before the export's own;
//                    absent when nothing decided them
//   "GPU N NVML"     counter, args device_used (and process_used when NVML named this process)
//   "Pinned host memory"  counter, arg bytes
//   instant events ("ph":"i", process scope) for OOM failures, OOM bundles, recoveries and alerts.
//   NVTX (and gpumemprof.h) ranges as complete events ("ph":"X", cat "nvtx") on their thread's track,
//   nested as they were; marks as instant events on their thread's track (cat "nvtx"). Names come
//   from attribution.jsonl, as the report's.
// Timestamps are microseconds since the profiler started, with nanosecond decimals.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "attribution_replay.h"
#include "bytes_text.h"
#include "category_levels.h"
#include "export_formats.h"
#include "export_thinning.h"
#include "human_text.h"
#include "json_views.h"
#include "records.h"
#include "run_directory_files.h"
#include "trace_replay.h"

namespace gmp::tool::exporter {
namespace {

class TraceEvents {
 public:
  // `first`: no event written to the file yet (shared by the processes of a job's file).
  TraceEvents(Context& ctx, const PerfettoProcess& process, bool& first)
      : ctx_(ctx), pid_(process.pid), offset_(process.offset_ns), first_(first),
        thinner_(ctx.resolution_ns, ctx.replay.window().since_ns, [this](const std::string& text) { write(text); }) {}

  // Starts one trace event with its common members; the caller adds the rest and closes it.
  JsonObject begin(char phase, std::string_view name, std::string_view cat, uint64_t ts_ns, uint64_t tid) {
    rec_.clear();
    JsonObject o(rec_);
    const char ph[2] = {phase, '\0'};
    o.str("ph", ph).str("name", name).str("cat", cat).key("ts");
    append_micros(rec_, ts_ns + offset_);
    o.u64("pid", pid_).u64("tid", tid);
    return o;
  }

  void process_name(std::string_view name) {
    metadata("process_name").str("name", name).close();
    close_metadata();
  }
  // The process's place among the track groups (a job's, in its order).
  void process_sort_index(uint64_t index) {
    metadata("process_sort_index").u64("sort_index", index).close();
    close_metadata();
  }

  // A point of counter track `track` (a key of its name); `values` are what its args show, which
  // `fill` writes.
  template <typename Fill>
  void counter(uint64_t track, std::string_view name, uint64_t ts_ns, std::span<const uint64_t> values, Fill&& fill) {
    JsonObject o = begin('C', name, "memory", ts_ns, pid_);
    o.key("args");
    JsonObject args(rec_);
    fill(args);
    args.close();
    o.close();
    thinner_.point(track, ts_ns, values, rec_);
  }

  // An instant event: process-scoped (drawn on the process's own track in Perfetto), or on the
  // track of thread `tid`.
  template <typename Fill>
  void instant(std::string_view name, std::string_view cat, const Event& e, uint64_t ts_ns, Fill&& fill,
               std::optional<uint64_t> tid = std::nullopt) {
    // tid = pid: process-scoped markers need no thread, and collector events carry thread 0.
    JsonObject o = begin('i', name, cat, ts_ns, tid.value_or(pid_));
    o.str("s", tid ? "t" : "p").key("args");
    JsonObject args(rec_);
    args.i64("device", e.device);
    fill(args);
    args.close();
    o.close();
    write(rec_);
  }

  // A range call: a slice of its thread's track.
  void range(const analysis::RangeCall& c) {
    JsonObject o = begin('X', c.name, "nvtx", c.entry_ns, c.thread);
    o.key("dur");
    append_micros(rec_, c.exit_ns - std::min(c.exit_ns, c.entry_ns));
    o.key("args");
    JsonObject args(rec_);
    args.u64("depth", c.depth);
    if (c.open_at_end) args.boolean("open_at_end", true);
    args.close();
    o.close();
    write(rec_);
  }

  // A mark: an instant on its thread's track.
  void mark(const analysis::MarkRow& m) {
    JsonObject o = begin('i', m.name, "nvtx", m.at_ns, m.thread);
    o.str("s", "t").key("args");
    JsonObject args(rec_);
    args.u64("index", m.index);
    args.close();
    o.close();
    write(rec_);
  }

  void finish() { thinner_.finish(); }

 private:
  void write(const std::string& text) {
    std::string& b = ctx_.out.buffer();
    b += first_ ? "\n" : ",\n";
    first_ = false;
    b += text;
    ctx_.out.written();
  }

  // A metadata event ("ph":"M") of the process, its args object open for the caller to fill and
  // close; close_metadata() then writes it.
  JsonObject metadata(std::string_view name) {
    rec_.clear();
    JsonObject o(rec_);
    o.str("ph", "M").str("name", name).u64("pid", pid_).u64("tid", pid_).key("args");
    return JsonObject(rec_);
  }
  void close_metadata() {
    rec_ += '}';
    write(rec_);
  }

  Context& ctx_;
  uint64_t pid_, offset_;
  bool& first_;
  Thinner thinner_;
  std::string rec_;  // the event being written
};

// Counter tracks' keys for the thinner: per device and figure, and the one pinned track.
enum class Track : uint64_t { Memory, Framework, Nvml, Categories };
uint64_t track_key(int device, Track t) { return static_cast<uint64_t>(device) * 4 + static_cast<uint64_t>(t); }
constexpr uint64_t kPinnedTrack = UINT64_MAX;

std::string gpu_track(int device, const char* what) { return "GPU " + std::to_string(device) + " " + what; }

std::string basename_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void write_header(Context& ctx, uint64_t pid) {
  std::string& b = ctx.out.buffer();
  b += "{\"displayTimeUnit\":\"ms\",\"otherData\":";
  JsonObject other(b);
  other.str("tool", "gpumemprof").str("run_directory", ctx.run.path).u64("pid", pid);
  const ManifestRecord& m = ctx.run.manifest;  // what it names, under the manifest's own keys
  const std::pair<const char*, std::string> named[] = {
      {"exe", m.exe}, {"host", m.host}, {"rank", m.rank ? std::to_string(*m.rank) : ""}, {"start_time_utc", m.start_time_utc}};
  for (const auto& [key, v] : named) {
    if (!v.empty()) other.str(key, v);
  }
  other.close();
  b += ",\"traceEvents\":[";
}

// Instant events for what went wrong or was noticed at this event, if anything.
void write_markers(TraceEvents& out, const Event& e, uint64_t ts) {
  if ((e.op == Op::Alloc || e.op == Op::VmmCreate) && e.result == kOutOfMemory) {
    const std::string name = "OOM: " + std::string(api_name(e.api)) + " of " + bytes_text(e.size);
    out.instant(name, "oom", e, ts, [&](JsonObject& a) {
      a.u64("size", e.size).str("api", api_name(e.api)).str("kind", kind_name(e.kind)).i64("result", e.result);
      a.str("error", cuda_error_name(e.result)).u64("thread", e.thread_id).u64("stream", e.stream);
    });
  } else if (e.op == Op::FrameworkOomFigures) {
    const auto f = FrameworkOomFiguresRecord::from_event(e);
    out.instant("PyTorch OOM: tried to allocate " + bytes_text(f.requested), "oom", e, ts, [&](JsonObject& a) {
      a.u64("size", f.requested).u64("free", f.free).u64("capacity", f.capacity);
      a.u64("allocated", f.allocated).u64("reserved", f.reserved).u64("thread", e.thread_id);
    });
  } else if (e.op == Op::FrameworkAttach) {
    const auto f = FrameworkAttachRecord::from_event(e);
    const bool attached = f.attached;
    const std::string version = framework_version_text(f.version);
    std::string name = "PyTorch " + version + (attached ? " allocator attached" : " allocator not attached");
    const FrameworkRefusal why = f.refusal;
    if (!attached) name += std::string(": ") + std::string(framework_refusal_name(why));
    out.instant(name, "framework", e, ts, [&](JsonObject& a) {
      a.boolean("attached", attached).str("version", version);
      if (!attached) a.str("refusal", framework_refusal_name(why));
    });
  } else if (e.op == Op::OomBundle) {
    const auto b = OomBundleRecord::from_event(e);
    out.instant("OOM bundle #" + std::to_string(b.sequence) + " written", "oom", e, ts,
                [&](JsonObject& a) { a.u64("sequence", b.sequence).u64("request_size", b.request_size); });
  } else if (e.op == Op::OomRecovered) {
    out.instant("OOM recovered", "oom", e, ts, [&](JsonObject& a) { a.u64("size", e.size); });
  } else if (e.op == Op::Alert) {
    const auto al = AlertRecord::from_event(e);
    const std::string type = alert_type_name(al.type);
    out.instant("alert: " + type + (al.fired ? " fired" : " cleared"), "alert", e, ts, [&](JsonObject& a) {
      a.str("type", type).boolean("fired", al.fired).u64("allocated", al.allocated).u64("reserved", al.reserved);
      a.u64("threshold", al.threshold);
    });
  } else if (e.op == Op::Cleanup) {
    const auto c = CleanupRecord::from_event(e);
    out.instant("watchdog cleanup: " + bytes_text(c.bytes_released) + " given back", "alert", e, ts,
                [&](JsonObject& a) { a.u64("bytes_released", c.bytes_released).u64("pools_trimmed", c.pools_trimmed); });
  }
}

// The device's memory track and, where its framework allocator is seen, its PyTorch track: a
// point where `after` differs from `previous`, or where a track starts (no `previous`).
void write_figures(TraceEvents& out, int device, uint64_t ts, const Figures& after, const Figures* previous) {
  const Figures& before = previous != nullptr ? *previous : after;
  if (previous == nullptr || after.driver_differs(before)) {
    const uint64_t v[] = {after.allocated, after.reserved};
    out.counter(track_key(device, Track::Memory), gpu_track(device, "memory"), ts, v,
                [&](JsonObject& a) { a.u64("allocated", v[0]).u64("reserved", v[1]); });
  }
  // From the bridge's attach (a point at its first figures) to a detach (a point at zero).
  if ((after.framework || before.framework) &&
      (previous == nullptr || after.framework_differs(before) || after.framework != before.framework)) {
    const uint64_t v[] = {after.framework_allocated, after.framework_reserved};
    out.counter(track_key(device, Track::Framework), gpu_track(device, "PyTorch"), ts, v,
                [&](JsonObject& a) { a.u64("allocated", v[0]).u64("reserved", v[1]); });
  }
}

// The tensors by category: decided from the whole trace (labels may come after a window starts), then
// which categories each device's track shows (those with a non-zero peak in the export's window),
// then their levels through the export's own replay.
class CategoryTracks {
 public:
  // False when nothing decided the categories (or the trace cannot be read again): no tracks.
  bool prepare(const std::string& trace_path, const reader::Window& window, const reader::Attribution& names) {
    categories_ = std::make_unique<TensorCategories>(analysis::replay_categories(names));
    if (!replay(trace_path, {}, [this](const Event& e, uint64_t index) { categories_->add(e, index); },
                [this](const Accounting& acc, uint64_t) { categories_->start(acc); })) {
      return false;
    }
    categories_->finish();
    if (!categories_->decided()) return false;
    analysis::CategoryLevels peaks(*categories_);
    if (!replay(trace_path, window, [&peaks](const Event& e, uint64_t) { peaks.add(e); },
                [&peaks](const Accounting& acc, uint64_t) { peaks.start(acc); })) {
      return false;
    }
    for (int device : peaks.devices()) {
      for (TensorCategory category : analysis::kCategoryOrder) {
        const auto c = static_cast<size_t>(category);
        if (peaks.peaks(device)[c] > 0) shown_[device].push_back(c);
      }
    }
    levels_ = std::make_unique<analysis::CategoryLevels>(*categories_);
    return true;
  }
  void start(const Accounting& acc) {
    if (levels_) levels_->start(acc);
  }
  // After the export's replay applied `e`: a point where a device's categories changed.
  void add(TraceEvents& out, const Event& e, uint64_t ts) {
    if (!levels_ || (e.op != Op::TensorAlloc && e.op != Op::TensorFreeCompleted)) return;
    levels_->add(e);
    write(out, e.device, ts);
  }
  // Every device's track at the window's start.
  void write_all(TraceEvents& out, uint64_t ts) {
    for (const auto& [device, _] : shown_) write(out, device, ts);
  }

 private:
  template <typename OnEvent, typename OnStart>
  static bool replay(const std::string& path, const reader::Window& window, OnEvent on_event, OnStart on_start) {
    reader::TraceReplay r;
    std::string error;
    if (!r.open(path, error)) return false;
    r.set_window(window);
    if (!r.begin_window()) return false;
    on_start(r.accounting(), r.index());
    while (r.next()) on_event(r.event(), r.index());
    return !r.failed();
  }
  void write(TraceEvents& out, int device, uint64_t ts) {
    auto shown = shown_.find(device);
    if (shown == shown_.end()) return;
    const CategoryBytes& now = levels_->current(device);
    std::vector<uint64_t> v;
    for (size_t c : shown->second) v.push_back(now[c]);
    auto [last, fresh] = last_.try_emplace(device, v);
    if (!fresh && last->second == v) return;
    last->second = v;
    out.counter(track_key(device, Track::Categories), gpu_track(device, "tensors by category"), ts, v,
                [&](JsonObject& a) {
                  for (size_t i = 0; i < v.size(); ++i) {
                    a.u64(tensor_category_name(static_cast<TensorCategory>(shown->second[i])), v[i]);
                  }
                });
  }

  std::unique_ptr<TensorCategories> categories_;
  std::unique_ptr<analysis::CategoryLevels> levels_;
  std::map<int, std::vector<size_t>> shown_;
  std::map<int, std::vector<uint64_t>> last_;
};

void write_pinned(TraceEvents& out, uint64_t ts, uint64_t bytes) {
  const uint64_t v[] = {bytes};
  out.counter(kPinnedTrack, "Pinned host memory", ts, v, [&](JsonObject& a) { a.u64("bytes", bytes); });
}

// --min-size: an allocation or release of at least that many bytes, on its thread's track.
void write_allocation(TraceEvents& out, const Event& e, uint64_t ts, uint64_t bytes) {
  const std::string name = std::string(op_name(e.op)) + " " + bytes_text(bytes);
  out.instant(name, "allocation", e, ts, [&](JsonObject& a) {
    a.u64("size", bytes).u64("address", e.address).str("api", api_name(e.api)).str("kind", kind_name(e.kind));
    a.u64("stack_id", e.stack_id);
  }, e.thread_id);
}

}  // namespace

void write_perfetto(Context& ctx) {
  const uint64_t pid = process_id(ctx);
  write_header(ctx, pid);
  const std::string& exe = ctx.run.manifest.exe;
  bool first = true;
  write_perfetto_process(ctx, {pid, exe.empty() ? "pid " + std::to_string(pid) : basename_of(exe)}, first);
  ctx.out.buffer() += "\n]}\n";
}

void write_perfetto_process(Context& ctx, const PerfettoProcess& process, bool& first) {
  TraceEvents out(ctx, process, first);
  out.process_name(process.name);
  if (process.sort_index) out.process_sort_index(*process.sort_index);

  const reader::Attribution names = reader::read_attribution(ctx.run.path + "/" + kAttributionFile);
  if (!names.error.empty()) {
    ctx.error = names.error;
    return;
  }
  analysis::AttributionReplay regions(names, ctx.replay.header().start_monotonic_ns);
  regions.on_range = [&out](const analysis::RangeCall& c) { out.range(c); };
  regions.on_mark = [&out](const analysis::MarkRow& m) { out.mark(m); };
  std::set<int> started;                                  // devices whose memory track has begun
  std::map<int, std::pair<uint64_t, uint64_t>> nvml_last;  // device -> (device used, process used)
  Replay& replay = ctx.replay;
  CategoryTracks categories;
  const bool by_category = categories.prepare(ctx.run.path, replay.window(), names);
  if (!replay.begin_window()) return;
  if (by_category) {
    categories.start(replay.accounting());
    categories.write_all(out, replay.window().since_ns);
  }
  // A window's tracks start at the state where it starts.
  if (const uint64_t since = replay.window().since_ns; since > 0) {
    for (const auto& [device, f] : replay.all_figures()) {
      started.insert(device);
      write_figures(out, device, since, f, nullptr);
    }
    if (const uint64_t pinned = replay.accounting().host_pinned().current; pinned > 0) write_pinned(out, since, pinned);
  }
  while (replay.next()) {
    const Event& e = replay.event();
    const uint64_t ts = replay.since_start(e.timestamp_ns);
    if (e.op == Op::DeviceInfo && e.device >= 0 && started.insert(e.device).second) {
      write_figures(out, e.device, ts, Figures{}, nullptr);
    }
    for (const Replay::Change& c : replay.changes()) {
      started.insert(c.device);
      write_figures(out, c.device, ts, c.after, &c.before);
    }
    if (replay.pinned_changed()) write_pinned(out, ts, replay.accounting().host_pinned().current);
    categories.add(out, e, ts);
    if (e.op == Op::Sample && e.device >= 0) {
      const auto s = SampleRecord::from_event(e);
      const std::pair<uint64_t, uint64_t> now{s.device_used, s.process_used};
      auto [it, inserted] = nvml_last.try_emplace(e.device, now);
      if (inserted || it->second != now) {
        it->second = now;
        const uint64_t v[] = {s.device_used, s.process_known() ? s.process_used : 0};
        out.counter(track_key(e.device, Track::Nvml), gpu_track(e.device, "NVML"), ts, v, [&](JsonObject& a) {
          a.u64("device_used", s.device_used);
          if (s.process_known()) a.u64("process_used", s.process_used);
        });
      }
    }
    if (ctx.min_size) {
      if (auto bytes = replay.allocation_size(); bytes && *bytes >= *ctx.min_size) write_allocation(out, e, ts, *bytes);
    }
    write_markers(out, e, ts);
    regions.apply(e, 0);  // only its calls and marks are written, not its byte figures
  }
  regions.finish(replay.accounting().last_timestamp_ns());
  out.finish();
}

}  // namespace gmp::tool::exporter
