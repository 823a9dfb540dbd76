#include "summary_builder.h"

namespace gmp {
namespace {

constexpr size_t kSummaryFailedShown = 100;

std::string capture_mode_name(uint8_t mode) {
  switch (mode) {
    case 0: return "global";        // CU_STREAM_CAPTURE_MODE_GLOBAL
    case 1: return "thread_local";  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    case 2: return "relaxed";       // CU_STREAM_CAPTURE_MODE_RELAXED
    default: return "";
  }
}

}  // namespace

Summary build_summary(const Accounting& acc, const SummaryContext& ctx) {
  Summary s;
  s.clean_exit = ctx.clean_exit;
  s.ended_by = ctx.ended_by;
  s.terminated_by_signal = ctx.terminated_by_signal > 0 ? static_cast<uint64_t>(ctx.terminated_by_signal) : 0;
  s.exit_status = ctx.exit_status;
  for (const auto& [ordinal, d] : acc.devices()) {
    auto name = ctx.device_names.find(ordinal);
    DeviceFigures f =
        device_figures(d, name != ctx.device_names.end() ? name->second : std::string(), ctx.start_monotonic_ns);
    // Ordinal -1 collects what no device could be named for (an unknown VMM handle's mapping).
    if (ordinal < 0) {
      s.unattributed = std::move(f);
    } else {
      s.devices.push_back(std::move(f));
    }
  }
  s.host_pinned_bytes = acc.host_pinned();
  s.host_pinned_allocs = acc.host_pinned_allocs();
  s.host_pinned_frees = acc.host_pinned_frees();
  s.events.recorded = acc.events();
  s.events.lost = ctx.events_lost;
  s.events.producer_waits = ctx.producer_waits;
  s.unknown_frees = acc.unknown_frees();
  s.failed_releases = acc.failed_releases();
  const auto live = acc.live_at_exit();
  s.live_at_exit_count = live.count;
  s.live_at_exit_bytes = live.bytes;
  s.duration_ns = since(acc.last_timestamp_ns(), ctx.start_monotonic_ns);
  if (const auto& fw = acc.framework(); fw.reported) {
    Summary::Framework f;
    f.state = fw.attached ? "attached" : fw.refusal == FrameworkRefusal::SelfCheckFailed ? "detached" : "refused";
    f.version = framework_version_text(fw.version);
    if (!fw.attached) f.refusal = std::string(framework_refusal_name(fw.refusal));
    const auto cached = acc.cached_at_exit();
    f.cached_at_exit_count = cached.count;
    f.cached_at_exit_bytes = cached.bytes;
    for (const auto& t : acc.live_tensors()) {
      ++f.tensors_at_exit_count;
      f.tensors_at_exit_bytes += t.size;
    }
    s.framework = std::move(f);
  }
  // The failed requests themselves: what was asked, of which entry point, and what the driver said.
  for (const auto& f : acc.failed_allocations()) {
    if (s.failed_allocations.size() >= kSummaryFailedShown) break;
    s.failed_allocations.push_back({std::string(api_name(f.api)), std::string(kind_name(f.kind)), f.device, f.size,
                                    f.result, f.thread_id, since(f.timestamp_ns, ctx.start_monotonic_ns)});
  }
  s.graphs_total = acc.graphs().size();
  for (const GraphStats& g : acc.graphs()) {
    if (s.graphs.size() >= Summary::kMaxGraphsListed) break;
    s.graphs.push_back({g.number, g.device, g.captured ? "capture" : "explicit", capture_mode_name(g.capture_mode),
                        g.allocs.size(), g.frees.size(), g.bytes_per_launch(), g.outliving_bytes(), g.launches,
                        g.uploads, g.instantiations, g.failed_launches, g.streams.size(), g.stack_id});
  }
  const auto& alerts = acc.alerts_fired();
  s.alerts = {alerts[1], alerts[2], alerts[3], alerts[4]};
  s.oom = {acc.oom().failures, acc.oom().bundles_written, acc.oom().recovered};
  return s;
}

}  // namespace gmp
