#include "json_views.h"

#include <cstdlib>
#include <variant>

#include "event_fields.h"
#include "json_fields.h"

namespace gmp {
namespace {

nlohmann::json kind_json(const KindStats& k) {
  return {{"current", k.bytes.current}, {"peak", k.bytes.peak}, {"allocs", k.allocs}, {"frees", k.frees}};
}


}  // namespace

nlohmann::json counter_json(const Counter& c) { return {{"current", c.current}, {"peak", c.peak}}; }

Counter counter_from_json(const nlohmann::json* j) {
  return {reader::u64_or(reader::member(j, "current")), reader::u64_or(reader::member(j, "peak"))};
}

std::string cuda_error_name(int code) {
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 800: return "CUDA_ERROR_NOT_PERMITTED";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return "CUresult " + std::to_string(code);
  }
}

nlohmann::json event_json(const Event& e, uint64_t start_ns) {
  nlohmann::json j = nlohmann::json::object();
  for (const EventField f : kEventFields) {
    nlohmann::json& member = j[std::string(event_field_name(f))];
    std::visit([&member](auto v) { member = v; }, event_field_value(e, f, since(e.timestamp_ns, start_ns)));
  }
  return j;
}

nlohmann::json framework_json(const FrameworkStats& f, uint64_t start_ns) {
  nlohmann::json j = {{"allocated_bytes", counter_json(f.allocated)},
          {"allocated_peak_at_ns", since(f.allocated_peak_ns, start_ns)},
          {"reserved_bytes", counter_json(f.reserved)},
          {"reserved_peak_at_ns", since(f.reserved_peak_ns, start_ns)},
          {"cached_bytes", f.cached()},
          {"pending_free_bytes", counter_json(f.pending_free)},
          {"outside_bytes", counter_json(f.outside)},
          {"outside_peak_at_ns", since(f.outside_peak_ns, start_ns)},
          {"tensor_allocs", f.tensor_allocs},
          {"tensor_frees", f.tensor_frees},
          {"segment_allocs", f.segment_allocs},
          {"segment_frees", f.segment_frees},
          {"ooms", f.ooms}};
  if (!f.private_pools.empty()) {
    nlohmann::json pools = nlohmann::json::array();
    for (const auto& [id, p] : f.private_pools) {
      pools.push_back({{"pool", framework_pool_text(id)},
                       {"reserved", counter_json(p.reserved)},
                       {"allocated", counter_json(p.allocated)}});
    }
    j["private_pools"] = std::move(pools);
  }
  return j;
}

FrameworkStats framework_from_json(const nlohmann::json* j) {
  using namespace reader;
  FrameworkStats f;
  f.attached = j != nullptr && j->is_object();
  f.allocated = counter_from_json(member(j, "allocated_bytes"));
  f.allocated_peak_ns = u64_or(member(j, "allocated_peak_at_ns"));
  f.reserved = counter_from_json(member(j, "reserved_bytes"));
  f.reserved_peak_ns = u64_or(member(j, "reserved_peak_at_ns"));
  f.pending_free = counter_from_json(member(j, "pending_free_bytes"));
  f.outside = counter_from_json(member(j, "outside_bytes"));
  f.outside_peak_ns = u64_or(member(j, "outside_peak_at_ns"));
  f.tensor_allocs = u64_or(member(j, "tensor_allocs"));
  f.tensor_frees = u64_or(member(j, "tensor_frees"));
  f.segment_allocs = u64_or(member(j, "segment_allocs"));
  f.segment_frees = u64_or(member(j, "segment_frees"));
  f.ooms = u64_or(member(j, "ooms"));
  for (const auto& p : array_or_empty(member(j, "private_pools"))) {
    const std::string id = str_or(member(&p, "pool"));
    const size_t comma = id.find(',');
    if (comma == std::string::npos) continue;
    char* end = nullptr;
    const uint64_t first = std::strtoull(id.c_str(), &end, 10), second = std::strtoull(id.c_str() + comma + 1, &end, 10);
    FrameworkStats::Pool& pool = f.private_pools[framework_pool_id(first, second)];
    pool.reserved = counter_from_json(member(&p, "reserved"));
    pool.allocated = counter_from_json(member(&p, "allocated"));
  }
  return f;
}

nlohmann::json device_json(const DeviceStats& d, const std::string& name, uint64_t start_ns) {
  nlohmann::json by_kind = nlohmann::json::object();
  for (Kind k : kDeviceKinds) by_kind[std::string(kind_name(k))] = kind_json(d.kind(k));
  by_kind["graph"]["reserved"] = counter_json(d.graph_reserved);
  by_kind["graph"]["used"] = counter_json(d.graph_used);
  by_kind["pool"]["reserved"] = counter_json(d.pool_reserved);
  by_kind["pool"]["released_by_pool_destroy"] = d.released_by_pool_destroy;
  by_kind["vmm"]["physical"] = counter_json(d.vmm_physical);
  nlohmann::json j = {{"device", d.device},
          {"name", name},
          {"total_bytes", d.total_bytes},
          {"allocated_bytes", counter_json(d.allocated)},
          {"reserved_bytes", counter_json(d.reserved)},
          {"allocated_peak_at_ns", since(d.allocated_peak_ns, start_ns)},
          {"reserved_peak_at_ns", since(d.reserved_peak_ns, start_ns)},
          {"by_kind", by_kind},
          {"alloc_count", d.alloc_count},
          {"free_count", d.free_count},
          {"failed_alloc_count", d.failed_alloc_count}};
  if (d.framework.attached) j["framework"] = framework_json(d.framework, start_ns);
  if (d.nvml.samples > 0) {
    j["nvml"] = {
        {"samples", d.nvml.samples},
        {"device_used_bytes", d.nvml.device_used},
        {"device_total_bytes", d.nvml.device_total},
        {"process_used_bytes", d.nvml.process_known ? nlohmann::json(d.nvml.process_used) : nlohmann::json(nullptr)},
        {"process_used_peak_bytes", d.nvml.process_used_peak}};
  }
  return j;
}

}  // namespace gmp
