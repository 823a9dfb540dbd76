#include "summary.h"

#include "json_views.h"

namespace gmp {
namespace {

uint64_t since_start(uint64_t ts, uint64_t start) { return ts > start ? ts - start : 0; }

constexpr size_t kSummaryFailedShown = 100;

}  // namespace

nlohmann::json build_summary(const Accounting& acc, const SummaryContext& ctx) {
  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json unattributed = nullptr;
  for (const auto& [ordinal, d] : acc.devices()) {
    auto name = ctx.device_names.find(ordinal);
    nlohmann::json j = device_json(d, name != ctx.device_names.end() ? name->second : std::string(),
                                   ctx.start_monotonic_ns);
    // Ordinal -1 collects what no device could be named for (an unknown VMM handle's mapping).
    if (ordinal < 0) {
      unattributed = j;
    } else {
      devices.push_back(j);
    }
  }
  const auto live = acc.live_at_exit();
  nlohmann::json s = {
      {"schema_version", 1},
      {"clean_exit", ctx.clean_exit},
      {"ended_by", ctx.ended_by},
      {"devices", devices},
      {"host_pinned_bytes", counter_json(acc.host_pinned())},
      {"host_pinned", {{"allocs", acc.host_pinned_allocs()}, {"frees", acc.host_pinned_frees()}}},
      {"events", {{"recorded", acc.events()}, {"lost", ctx.events_lost}, {"producer_waits", ctx.producer_waits}}},
      {"unknown_frees", acc.unknown_frees()},
      {"failed_releases", acc.failed_releases()},
      {"live_at_exit", {{"count", live.count}, {"bytes", live.bytes}}},
      {"duration_ns", since_start(acc.last_timestamp_ns(), ctx.start_monotonic_ns)},
  };
  // The failed requests themselves: what was asked, of which entry point, and what the driver said.
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& f : acc.failed_allocations()) {
    if (failed.size() >= kSummaryFailedShown) break;
    failed.push_back({{"api", std::string(api_name(f.api))},
                      {"kind", std::string(kind_name(f.kind))},
                      {"device", f.device},
                      {"size", f.size},
                      {"error", f.result},
                      {"thread", f.thread_id},
                      {"at_ns", since_start(f.timestamp_ns, ctx.start_monotonic_ns)}});
  }
  s["failed_allocations"] = failed;
  const auto& alerts = acc.alerts_fired();
  s["alerts"] = {{"warning", alerts[1]}, {"critical", alerts[2]}, {"fragmentation", alerts[3]}, {"growth", alerts[4]}};
  s["oom"] = {{"failures", acc.oom().failures},
              {"bundles_written", acc.oom().bundles_written},
              {"recovered", acc.oom().recovered}};
  if (ctx.terminated_by_signal != 0) s["terminated_by_signal"] = ctx.terminated_by_signal;
  if (!unattributed.is_null()) s["unattributed"] = unattributed;
  return s;
}

}  // namespace gmp
