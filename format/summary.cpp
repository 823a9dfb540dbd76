#include "summary.h"

#include "json_fields.h"
#include "json_views.h"

namespace gmp {
namespace {

using json = nlohmann::json;
using namespace reader;  // json_fields.h

}  // namespace

json to_json(const Summary& s) {
  json devices = json::array();
  for (const auto& d : s.devices) devices.push_back(to_json(d));
  const auto& e = s.events;
  auto known = [&e](uint64_t v) { return e.counts_known ? json(v) : json(nullptr); };
  json events = {{"recorded", e.recorded}, {"lost", known(e.lost)}, {"producer_waits", known(e.producer_waits)}};
  if (!e.counts_known)
    events["unwritten"] = nullptr;
  else if (e.unwritten)
    events["unwritten"] = *e.unwritten;
  if (e.trace_error) events["trace_error"] = *e.trace_error;
  json failed = json::array();
  for (const auto& f : s.failed_allocations) {
    failed.push_back({{"api", f.api},
                      {"kind", f.kind},
                      {"device", f.device},
                      {"size", f.size},
                      {"error", f.error},
                      {"thread", f.thread},
                      {"at_ns", f.at_ns}});
  }
  json j = {
      {"schema_version", 1},
      {"clean_exit", s.clean_exit},
      {"ended_by", s.ended_by},
      {"devices", devices},
      {"host_pinned_bytes", counter_json(s.host_pinned_bytes)},
      {"host_pinned", {{"allocs", s.host_pinned_allocs}, {"frees", s.host_pinned_frees}}},
      {"events", events},
      {"unknown_frees", s.unknown_frees},
      {"failed_releases", s.failed_releases},
      {"live_at_exit", {{"count", s.live_at_exit_count}, {"bytes", s.live_at_exit_bytes}}},
      {"duration_ns", s.duration_ns},
      {"failed_allocations", failed},
      {"alerts",
       {{"warning", s.alerts.warning},
        {"critical", s.alerts.critical},
        {"fragmentation", s.alerts.fragmentation},
        {"growth", s.alerts.growth}}},
      {"oom",
       {{"failures", s.oom.failures}, {"bundles_written", s.oom.bundles_written}, {"recovered", s.oom.recovered}}},
  };
  if (s.graphs_total != 0) {
    json graphs = json::array();
    for (const auto& g : s.graphs) {
      graphs.push_back({{"graph", g.number},
                        {"device", g.device},
                        {"origin", g.origin},
                        {"capture_mode", g.capture_mode.empty() ? json(nullptr) : json(g.capture_mode)},
                        {"alloc_nodes", g.alloc_nodes},
                        {"free_nodes", g.free_nodes},
                        {"bytes_per_launch", g.bytes_per_launch},
                        {"outliving_bytes", g.outliving_bytes},
                        {"launches", g.launches},
                        {"uploads", g.uploads},
                        {"instantiations", g.instantiations},
                        {"failed_launches", g.failed_launches},
                        {"streams", g.streams},
                        {"stack_id", g.stack_id}});
    }
    j["graphs"] = std::move(graphs);
    j["graphs_total"] = s.graphs_total;
  }
  if (s.terminated_by_signal != 0) j["terminated_by_signal"] = s.terminated_by_signal;
  if (s.exit_status) j["exit_status"] = *s.exit_status;
  if (s.unattributed) j["unattributed"] = to_json(*s.unattributed);
  if (s.trace_events_written) j["trace_events_written"] = *s.trace_events_written;
  if (const auto& t = s.trace) {
    j["trace"] = {{"max_bytes", t->max_bytes},
                  {"segments", t->segments},
                  {"segments_dropped", t->segments_dropped},
                  {"events_dropped", t->events_dropped},
                  {"kept_from_ns", t->kept_from_ns}};
  }
  if (const auto& f = s.framework) {
    j["framework"] = {{"name", f->name},
                      {"state", f->state},
                      {"version", f->version},
                      {"cached_at_exit", {{"count", f->cached_at_exit_count}, {"bytes", f->cached_at_exit_bytes}}},
                      {"tensors_at_exit", {{"count", f->tensors_at_exit_count}, {"bytes", f->tensors_at_exit_bytes}}}};
    if (!f->refusal.empty()) j["framework"]["refusal"] = f->refusal;
  }
  return j;
}

Summary summary_from_json(const json& j) {
  Summary s;
  s.clean_exit = as_bool(member(&j, "clean_exit")).value_or(true);
  s.ended_by = str_or(member(&j, "ended_by"));
  s.terminated_by_signal = u64_or(member(&j, "terminated_by_signal"));
  if (const auto status = as_u64(member(&j, "exit_status")); status && *status <= 255) {
    s.exit_status = static_cast<int>(*status);
  }
  const json* devices = member(&j, "devices");
  s.devices_listed = devices != nullptr && devices->is_array();
  for (const auto& d : array_or_empty(devices)) s.devices.push_back(device_figures_from_json(d));
  if (const json* u = member(&j, "unattributed"); u != nullptr && u->is_object()) {
    s.unattributed = device_figures_from_json(*u);
  }
  s.host_pinned_bytes = counter_from_json(member(&j, "host_pinned_bytes"));
  const json* pinned = member(&j, "host_pinned");
  s.host_pinned_allocs = u64_or(member(pinned, "allocs"));
  s.host_pinned_frees = u64_or(member(pinned, "frees"));
  const json* events = member(&j, "events");
  s.events.recorded = u64_or(member(events, "recorded"));
  s.events.lost = u64_or(member(events, "lost"));
  s.events.producer_waits = u64_or(member(events, "producer_waits"));
  s.events.unwritten = as_u64(member(events, "unwritten"));
  s.events.trace_error = as_string(member(events, "trace_error"));
  s.trace_events_written = as_u64(member(&j, "trace_events_written"));
  if (const json* t = member(&j, "trace"); t != nullptr && t->is_object()) {
    s.trace = Summary::Trace{u64_or(member(t, "max_bytes")), u64_or(member(t, "segments")),
                             u64_or(member(t, "segments_dropped")), u64_or(member(t, "events_dropped")),
                             u64_or(member(t, "kept_from_ns"))};
  }
  s.unknown_frees = u64_or(member(&j, "unknown_frees"));
  s.failed_releases = u64_or(member(&j, "failed_releases"));
  const json* live = member(&j, "live_at_exit");
  s.live_at_exit_count = u64_or(member(live, "count"));
  s.live_at_exit_bytes = u64_or(member(live, "bytes"));
  s.duration_ns = u64_or(member(&j, "duration_ns"));
  // Every element counts (a report says how many requests failed); one that is not an object reads
  // as an entry of defaults.
  for (const auto& f : array_or_empty(member(&j, "failed_allocations"))) {
    s.failed_allocations.push_back({str_or(member(&f, "api")), str_or(member(&f, "kind")),
                                    as_device(member(&f, "device")).value_or(-1), u64_or(member(&f, "size")),
                                    as_i64(member(&f, "error")).value_or(0), u64_or(member(&f, "thread")),
                                    u64_or(member(&f, "at_ns"))});
  }
  const json* alerts = member(&j, "alerts");
  s.alerts = {u64_or(member(alerts, "warning")), u64_or(member(alerts, "critical")),
              u64_or(member(alerts, "fragmentation")), u64_or(member(alerts, "growth"))};
  if (const json* f = member(&j, "framework"); f != nullptr && f->is_object()) {
    Summary::Framework fw;
    fw.name = str_or(member(f, "name"));
    fw.state = str_or(member(f, "state"));
    fw.version = str_or(member(f, "version"));
    fw.refusal = str_or(member(f, "refusal"));
    const json* cached = member(f, "cached_at_exit");
    fw.cached_at_exit_count = u64_or(member(cached, "count"));
    fw.cached_at_exit_bytes = u64_or(member(cached, "bytes"));
    const json* tensors = member(f, "tensors_at_exit");
    fw.tensors_at_exit_count = u64_or(member(tensors, "count"));
    fw.tensors_at_exit_bytes = u64_or(member(tensors, "bytes"));
    s.framework = std::move(fw);
  }
  for (const auto& g : array_or_empty(member(&j, "graphs"))) {
    s.graphs.push_back({u64_or(member(&g, "graph")), as_device(member(&g, "device")).value_or(-1),
                        str_or(member(&g, "origin")), str_or(member(&g, "capture_mode")),
                        u64_or(member(&g, "alloc_nodes")), u64_or(member(&g, "free_nodes")),
                        u64_or(member(&g, "bytes_per_launch")), u64_or(member(&g, "outliving_bytes")),
                        u64_or(member(&g, "launches")), u64_or(member(&g, "uploads")),
                        u64_or(member(&g, "instantiations")), u64_or(member(&g, "failed_launches")),
                        u64_or(member(&g, "streams")), u64_or(member(&g, "stack_id"))});
  }
  s.graphs_total = std::max<uint64_t>(u64_or(member(&j, "graphs_total")), s.graphs.size());
  const json* oom = member(&j, "oom");
  s.oom = {u64_or(member(oom, "failures")), u64_or(member(oom, "bundles_written")), u64_or(member(oom, "recovered"))};
  return s;
}

}  // namespace gmp
