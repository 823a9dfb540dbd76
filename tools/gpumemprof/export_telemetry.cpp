// telemetry-v2: the "TelemetryEvent v2" records of the Python gpumemprof package (its
// docs/telemetry_schema.md), as one JSON array, which its load_telemetry_events() reads, so its
// analyzer and TUI can open our runs. Validation there is strict: exactly the 18 required fields
// plus the optional job_id, rank, local_rank and world_size; integers (never booleans or floats);
// used and free never above total; rank and local_rank below world_size.
//
// Records, in trace order:
//   allocation / deallocation  each change of a device's allocated or reserved bytes
//   sample                     each NVML sample (Op::Sample)
//   warning / critical         each alert that fired (critical for the critical alert)
//   error                      each allocation refused with CUDA_ERROR_OUT_OF_MEMORY, and each
//                              framework OOM (PyTorch's figures, Op::FrameworkOomFigures)
//   cleanup                    each trim of the watchdog (Op::Cleanup, docs/alerts.md)
// allocator_allocated_bytes and allocator_reserved_bytes are what the Python package reads from
// torch.cuda.memory_allocated() and memory_reserved(): on a device whose framework allocator the
// bridge delivers (docs/framework-bridge.md), the framework's allocated (tensors) and reserved
// bytes, with the driver level's in the metadata (driver_allocated_bytes, driver_reserved_bytes);
// elsewhere the driver level's. A change at either level makes a record.
// The device view (device_used/free/total): the latest NVML sample, or the cuMemGetInfo figures
// recorded at an out-of-memory failure, whichever is newer, moved by the change in this process's
// reserved bytes since it was taken (the trace knows those exactly; other processes are assumed
// unchanged until the next sample). Before either, used is this process's reserved bytes, free is
// null and total is what the driver reported for the device.
#include <charconv>
#include <map>

#include "count_text.h"
#include "export_formats.h"
#include "export_thinning.h"
#include "human_text.h"
#include "json_views.h"
#include "records.h"

namespace gmp::tool::exporter {
namespace {

constexpr const char* kCollector = "gpumemprof.cuda_tracker";

// The event's own fields in each record's metadata.
constexpr std::array<EventField, 7> kMetadataEventFields = {
    EventField::Op, EventField::Api, EventField::Kind, EventField::Size, EventField::Address, EventField::Thread,
    EventField::StackId};

struct DeviceView {
  enum class Source { Tracked, Nvml, DriverQuery } source = Source::Tracked;
  uint64_t used = 0, total = 0;
  uint64_t reserved_then = 0;  // this process's reserved bytes when the view was taken
};

const char* source_name(DeviceView::Source s) {
  switch (s) {
    case DeviceView::Source::Nvml: return "nvml";
    case DeviceView::Source::DriverQuery: return "cuMemGetInfo";
    case DeviceView::Source::Tracked: break;
  }
  return "tracked_reserved";
}

class TelemetryWriter {
 public:
  explicit TelemetryWriter(Context& ctx)
      : ctx_(ctx), b_(ctx.out.buffer()),
        thinner_(ctx.resolution_ns, ctx.replay.window().since_ns, [this](const std::string& text) { write(text); }) {
    pid_ = process_id(ctx);
    host_ = ctx.run.manifest.host;
    if (host_.empty()) host_ = "unknown";  // the schema wants a non-empty host
    sampling_ms_ = ctx.run.manifest.config.sample_ms;
  }

  void run() {
    b_ += '[';
    Replay& replay = ctx_.replay;
    while (replay.next()) {
      const Event& e = replay.event();
      observe_device(e);
      for (const Replay::Change& c : replay.changes()) on_change(e, c);
      if (e.op == Op::Sample && e.device >= 0) on_sample(e);
      if (e.op == Op::Alert && e.result == 1 && e.device >= 0) on_alert(e);
      if ((e.op == Op::Alloc || e.op == Op::VmmCreate) && e.result == kOutOfMemory && e.device >= 0) on_oom(e);
      if (e.op == Op::FrameworkOomFigures && e.device >= 0) on_framework_oom(e);
      if (e.op == Op::Cleanup && e.device >= 0) on_cleanup(e);
    }
    thinner_.finish();
    b_ += first_ ? "]\n" : "\n]\n";
  }

 private:
  // NVML samples and the driver's own figures at a failure replace the tracked device view.
  void observe_device(const Event& e) {
    if (e.device < 0) return;
    const uint64_t reserved = ctx_.replay.figures(e.device).reserved;
    if (e.op == Op::Sample) {
      const auto s = SampleRecord::from_event(e);
      views_[e.device] = {DeviceView::Source::Nvml, s.device_used, s.device_total, reserved};
    } else if (e.op == Op::DriverMemory) {
      const auto m = DriverMemoryRecord::from_event(e);
      views_[e.device] = {DeviceView::Source::DriverQuery, m.total > m.free ? m.total - m.free : 0, m.total, reserved};
    }
  }

  void on_change(const Event& e, const Replay::Change& c) {
    // The bridge attaching changes no figure: nothing to record.
    if (!c.after.driver_differs(c.before) && !c.after.framework_differs(c.before)) return;
    const bool fw = c.after.framework;
    const int64_t d_alloc = static_cast<int64_t>(fw ? c.after.framework_allocated - c.before.framework_allocated
                                                    : c.after.allocated - c.before.allocated);
    const int64_t d_res = static_cast<int64_t>(fw ? c.after.framework_reserved - c.before.framework_reserved
                                                  : c.after.reserved - c.before.reserved);
    // With a framework, a change outside it (another library's memory) moves the driver level only.
    const int64_t d_driver = static_cast<int64_t>(c.after.reserved - c.before.reserved);
    const bool grew = d_alloc > 0 || (d_alloc == 0 && (d_res > 0 || (d_res == 0 && fw && d_driver > 0)));
    std::string context = std::string(api_name(e.api)) + " " + std::string(op_name(e.op));
    if (e.size != 0) context += " of " + std::to_string(e.size) + " bytes";
    record(e, c.device, grew ? "allocation" : "deallocation", d_alloc, context, [](JsonObject&) {});
    // The figure rows go through the resolution; --min-size keeps larger allocations' rows whole.
    const auto bytes = ctx_.replay.allocation_size();
    if (ctx_.min_size && bytes && *bytes >= *ctx_.min_size) {
      write(rec_);
      return;
    }
    const uint64_t v[] = {c.after.allocated, c.after.reserved, c.after.framework_allocated, c.after.framework_reserved};
    thinner_.point(static_cast<uint64_t>(c.device), ctx_.replay.since_start(e.timestamp_ns), v, rec_);
  }

  void on_sample(const Event& e) {
    const auto s = SampleRecord::from_event(e);
    record(e, e.device, "sample", 0, "NVML sample", [&](JsonObject& m) {
      if (s.process_known()) m.u64("nvml_process_used_bytes", s.process_used);
      else m.null("nvml_process_used_bytes");
    });
    write(rec_);
  }

  void on_alert(const Event& e) {
    const auto a = AlertRecord::from_event(e);
    const std::string type = alert_type_name(a.type);
    const bool critical = a.type == AlertType::Critical;
    record(e, e.device, critical ? "critical" : "warning", 0, type + " alert fired", [&](JsonObject& m) {
      m.str("alert_type", type).u64("alert_threshold_bytes", a.threshold);
    });
    write(rec_);
  }

  void on_cleanup(const Event& e) {
    const auto c = CleanupRecord::from_event(e);
    const std::string context = "watchdog trimmed " + counted(c.pools_trimmed, "pool") + ": " +
                                std::to_string(c.bytes_released) + " bytes given back";
    record(e, e.device, "cleanup", 0, context,
           [&](JsonObject& m) { m.u64("bytes_released", c.bytes_released).u64("pools_trimmed", c.pools_trimmed); });
    write(rec_);
  }

  void on_oom(const Event& e) {
    const std::string context = std::string(api_name(e.api)) + " of " + std::to_string(e.size) +
                                " bytes failed: " + cuda_error_name(e.result);
    record(e, e.device, "error", 0, context, [&](JsonObject& m) {
      m.boolean("oom", true).str("cuda_error", cuda_error_name(e.result)).u64("requested_bytes", e.size);
    });
    write(rec_);
  }

  void on_framework_oom(const Event& e) {
    const auto f = FrameworkOomFiguresRecord::from_event(e);
    const std::string context = "PyTorch out of memory: tried to allocate " + std::to_string(f.requested) + " bytes";
    record(e, e.device, "error", 0, context, [&](JsonObject& m) {
      m.boolean("oom", true).u64("requested_bytes", f.requested).u64("framework_free_bytes", f.free);
      m.u64("framework_capacity_bytes", f.capacity).u64("framework_allocated_bytes", f.allocated);
      m.u64("framework_reserved_bytes", f.reserved);
    });
    write(rec_);
  }

  void write(const std::string& text) {
    b_ += first_ ? "\n" : ",\n";
    first_ = false;
    b_ += text;
    ctx_.out.written();
  }

  // Renders one record into rec_.
  template <typename Extra>
  void record(const Event& e, int device, std::string_view type, int64_t change, const std::string& context,
              Extra&& extra) {
    const Figures f = ctx_.replay.figures(device);
    const DeviceView view = views_.count(device) ? views_[device] : DeviceView{};
    std::optional<uint64_t> total;
    if (view.source != DeviceView::Source::Tracked && view.total > 0) {
      total = view.total;
    } else if (auto it = ctx_.replay.accounting().devices().find(device);
               it != ctx_.replay.accounting().devices().end() && it->second.total_bytes > 0) {
      total = it->second.total_bytes;
    } else {
      total = manifest_device_total(ctx_, device);
    }
    uint64_t used = f.reserved;
    if (view.source != DeviceView::Source::Tracked) {
      const int64_t moved = static_cast<int64_t>(f.reserved - view.reserved_then);
      used = moved < 0 && static_cast<uint64_t>(-moved) > view.used ? 0 : view.used + static_cast<uint64_t>(moved);
    }
    if (total && used > *total) used = *total;  // the schema forbids used > total
    std::optional<uint64_t> free;
    if (view.source != DeviceView::Source::Tracked && total) free = *total - used;

    rec_.clear();
    JsonObject o(rec_);
    o.u64("schema_version", 2)
        .u64("timestamp_ns", ctx_.replay.header().start_realtime_ns + ctx_.replay.since_start(e.timestamp_ns))
        .str("event_type", type)
        .str("collector", kCollector)
        .u64("sampling_interval_ms", sampling_ms_)
        .u64("pid", pid_)
        .str("host", host_)
        .str_or_null("job_id", ctx_.identity.job_id)
        .u64("rank", ctx_.identity.rank)
        .u64("local_rank", ctx_.identity.local_rank)
        .u64("world_size", ctx_.identity.world_size)
        .i64("device_id", device)
        .u64("allocator_allocated_bytes", f.framework ? f.framework_allocated : f.allocated)
        .u64("allocator_reserved_bytes", f.framework ? f.framework_reserved : f.reserved)
        .null("allocator_active_bytes")  // caching-allocator figures: not visible at the driver level
        .null("allocator_inactive_bytes")
        .i64("allocator_change_bytes", change)
        .u64("device_used_bytes", used);
    if (free) o.u64("device_free_bytes", *free);
    else o.null("device_free_bytes");
    if (total) o.u64("device_total_bytes", *total);
    else o.null("device_total_bytes");
    o.str("context", context).key("metadata");
    JsonObject m(rec_);
    m.str("backend", "cuda")
        .str("sampling_source", "gpumemprof-shim")
        .boolean("supports_device_total", total.has_value())
        .boolean("supports_device_free", free.has_value())
        .str("device_view_source", source_name(view.source));
    if (f.framework) {
      m.str("allocator_level", "framework").u64("driver_allocated_bytes", f.allocated);
      m.u64("driver_reserved_bytes", f.reserved);
    }
    write_event_fields(m, e, 0, kMetadataEventFields);
    extra(m);
    m.close();
    o.close();
  }

  Context& ctx_;
  std::string& b_;
  uint64_t pid_ = 0, sampling_ms_ = 0;
  std::string host_;
  std::map<int, DeviceView> views_;
  Thinner thinner_;
  std::string rec_;  // the record being written
  bool first_ = true;
};

}  // namespace

std::optional<Identity> telemetry_identity(const ManifestRecord& manifest, std::optional<uint64_t> world_size,
                                           std::vector<std::string>& notes, std::string& error) {
  Identity id;
  id.job_id = manifest.job_id;
  id.rank = manifest.rank.value_or(0);
  // Not recorded (no launcher, or a manifest before the launcher fields): the Python loader
  // defaults the local rank to the rank as well.
  id.local_rank = manifest.local_rank.value_or(id.rank);
  const char* source = world_size ? "--world-size" : "the manifest's world size";
  world_size = world_size ? world_size : manifest.world_size;
  if (world_size) {
    if (*world_size <= id.rank) {
      error = std::string(source) + " " + std::to_string(*world_size) + " is not above the run's rank " +
              std::to_string(id.rank);
      return std::nullopt;
    }
    id.world_size = *world_size;
  } else {
    id.world_size = id.rank + 1;
    if (id.rank > 0) {
      notes.push_back("the run is rank " + std::to_string(id.rank) + " but its world size is not recorded; exported " +
                      "world_size " + std::to_string(id.world_size) + " (pass --world-size N)");
    }
  }
  return id;
}

void write_telemetry_v2(Context& ctx) { TelemetryWriter(ctx).run(); }

}  // namespace gmp::tool::exporter
