#include "device_figures.h"

#include "json_fields.h"
#include "json_views.h"

namespace gmp {
namespace {

using json = nlohmann::json;
using namespace reader;  // json_fields.h

KindStats kind_stats(const json* j) {
  return {counter_from_json(j), u64_or(member(j, "allocs")), u64_or(member(j, "frees"))};
}

}  // namespace

DeviceFigures device_figures(const DeviceStats& d, const std::string& name, uint64_t start_ns) {
  DeviceFigures f{d, name};
  f.stats.allocated_peak_ns = since(d.allocated_peak_ns, start_ns);
  f.stats.reserved_peak_ns = since(d.reserved_peak_ns, start_ns);
  FrameworkStats& fw = f.stats.framework;
  fw.allocated_peak_ns = since(fw.allocated_peak_ns, start_ns);
  fw.reserved_peak_ns = since(fw.reserved_peak_ns, start_ns);
  fw.outside_peak_ns = since(fw.outside_peak_ns, start_ns);
  return f;
}

// Peak times are held as written, since the profiler started: device_json() is given start 0.
json to_json(const DeviceFigures& f) { return device_json(f.stats, f.name, 0); }

DeviceFigures device_figures_from_json(const json& j) {
  const json* d = &j;
  DeviceFigures f;
  DeviceStats& s = f.stats;
  s.device = as_device(member(d, "device")).value_or(-1);
  f.name = str_or(member(d, "name"));
  s.total_bytes = u64_or(member(d, "total_bytes"));
  s.allocated = counter_from_json(member(d, "allocated_bytes"));
  s.reserved = counter_from_json(member(d, "reserved_bytes"));
  s.allocated_peak_ns = u64_or(member(d, "allocated_peak_at_ns"));
  s.reserved_peak_ns = u64_or(member(d, "reserved_peak_at_ns"));
  const json* by_kind = member(d, "by_kind");
  for (Kind k : kDeviceKinds) {
    s.kind(k) = kind_stats(member(by_kind, std::string(kind_name(k)).c_str()));
  }
  s.pool_reserved = counter_from_json(member(member(by_kind, "pool"), "reserved"));
  s.released_by_pool_destroy = u64_or(member(member(by_kind, "pool"), "released_by_pool_destroy"));
  s.vmm_physical = counter_from_json(member(member(by_kind, "vmm"), "physical"));
  s.graph_reserved = counter_from_json(member(member(by_kind, "graph"), "reserved"));
  s.graph_used = counter_from_json(member(member(by_kind, "graph"), "used"));
  s.alloc_count = u64_or(member(d, "alloc_count"));
  s.free_count = u64_or(member(d, "free_count"));
  s.failed_alloc_count = u64_or(member(d, "failed_alloc_count"));
  s.framework = framework_from_json(member(d, "framework"));
  if (const json* n = member(d, "nvml"); n != nullptr && n->is_object()) {
    f.nvml_listed = true;
    s.nvml.samples = u64_or(member(n, "samples"));
    s.nvml.device_used = u64_or(member(n, "device_used_bytes"));
    s.nvml.device_total = u64_or(member(n, "device_total_bytes"));
    const auto process_used = as_u64(member(n, "process_used_bytes"));
    s.nvml.process_known = process_used.has_value();
    s.nvml.process_used = process_used.value_or(0);
    s.nvml.process_used_peak = u64_or(member(n, "process_used_peak_bytes"));
    if (const json* procs = member(n, "processes"); procs != nullptr && procs->is_array()) {
      f.nvml_processes.emplace();
      for (const auto& p : *procs) {
        auto pid = as_u64(member(&p, "pid"));
        auto used = as_u64(member(&p, "used_bytes"));
        if (pid && used) f.nvml_processes->emplace_back(*pid, *used);
      }
    }
  }
  return f;
}

}  // namespace gmp
