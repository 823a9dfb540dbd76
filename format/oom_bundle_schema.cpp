#include "oom_bundle_schema.h"

#include <algorithm>

#include "json_fields.h"
#include "json_views.h"
#include "manifest_record.h"
#include "records.h"

namespace gmp {
namespace {

using json = nlohmann::json;
using namespace reader;  // json_fields.h

json request_json(const OomRequest& r) {
  return {{"api", r.api},
          {"kind", r.kind},
          {"size", r.size},
          {"device", r.device},
          {"stream", r.stream},
          {"thread", r.thread},
          {"error", or_null(r.error)},
          {"error_name", r.error_name},
          {"t_ns", or_null(r.t_ns)}};
}

// False when there is no size: the request is what an explanation is about.
bool read_request(const json* r, OomRequest& out, std::string& problem) {
  if (r == nullptr || !r->is_object()) {
    problem = "has no \"request\" object";
    return false;
  }
  auto size = as_u64(member(r, "size"));
  if (!size) {
    problem = "has no request size (\"request\": {\"size\": N})";
    return false;
  }
  out.size = *size;
  out.api = str_or(member(r, "api"));
  out.kind = str_or(member(r, "kind"));
  out.error_name = str_or(member(r, "error_name"));
  out.device = as_device(member(r, "device")).value_or(-1);
  out.stream = u64_or(member(r, "stream"));
  out.thread = u64_or(member(r, "thread"));
  out.error = as_i64(member(r, "error"));
  out.t_ns = as_u64(member(r, "t_ns"));
  return true;
}

}  // namespace

json to_json(const OomFramework& f) {
  return {{"device", f.device},
          {"requested_bytes", f.requested},
          {"free_bytes", f.free},
          {"capacity_bytes", f.capacity},
          {"allocated_bytes", f.allocated},
          {"reserved_bytes", f.reserved},
          {"process_used_bytes", f.process_used},
          {"process_used_source", f.process_used_from_nvml ? "nvml" : "capacity_less_free"},
          {"non_pytorch_bytes", f.non_pytorch},
          {"accounting", framework_json(f.accounting, 0)}};
}

namespace {

OomFramework framework_section_from_json(const json* j, int request_device) {
  OomFramework f;
  f.device = as_device(member(j, "device")).value_or(request_device);
  f.requested = u64_or(member(j, "requested_bytes"));
  f.free = u64_or(member(j, "free_bytes"));
  f.capacity = u64_or(member(j, "capacity_bytes"));
  f.allocated = u64_or(member(j, "allocated_bytes"));
  f.reserved = u64_or(member(j, "reserved_bytes"));
  f.process_used = u64_or(member(j, "process_used_bytes"));
  f.process_used_from_nvml = str_or(member(j, "process_used_source")) == "nvml";
  f.non_pytorch = u64_or(member(j, "non_pytorch_bytes"));
  f.accounting = framework_from_json(member(j, "accounting"));
  return f;
}

}  // namespace

OomFramework oom_framework(const Event& e, const DeviceStats& d, uint64_t start_ns) {
  OomFramework f;
  f.device = e.device;
  const auto r = FrameworkOomFiguresRecord::from_event(e);
  f.requested = r.requested;
  f.free = r.free;
  f.capacity = r.capacity;
  f.allocated = r.allocated;
  f.reserved = r.reserved;
  f.process_used_from_nvml = d.nvml.samples > 0 && d.nvml.process_known;
  f.process_used = f.process_used_from_nvml ? d.nvml.process_used : f.capacity - std::min(f.free, f.capacity);
  f.non_pytorch = f.process_used - std::min(f.reserved, f.process_used);
  f.accounting = device_figures(d, "", start_ns).stats.framework;  // peak times made relative as devices[]'s
  return f;
}

json to_json(const std::vector<FrameworkSegment>& segments) {
  json out = json::array();
  for (const auto& s : segments) out.push_back({{"address", s.address}, {"size", s.size}, {"device", s.device}});
  return out;
}

std::string oom_bundle_name(const std::string& utc_timestamp, int pid, uint64_t sequence) {
  return kOomBundlePrefix + utc_timestamp + "_" + std::to_string(pid) + "_cuda_" + std::to_string(sequence);
}

uint64_t oom_bundle_sequence(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i == name.size() || name.size() - i > 18) return 0;
  return std::stoull(name.substr(i));
}

OomAllocation oom_allocation(const LiveAllocation& a, uint64_t now_ns) {
  return {a.address,
          a.size,
          std::string(kind_name(a.kind)),
          std::string(api_name(a.api)),
          a.device,
          a.thread_id,
          since(now_ns, a.timestamp_ns) / 1'000'000,
          a.stack_id};
}

json to_json(const OomAllocation& a) {
  return {{"address", a.address},        {"size", a.size},        {"kind", a.kind},
          {"device", a.device},          {"api", a.api},          {"thread", a.thread},
          {"age_ms", or_null(a.age_ms)}, {"stack_id", a.stack_id}};
}

OomAllocation oom_allocation_from_json(const json& j) {
  OomAllocation a;
  a.address = u64_or(member(&j, "address"));
  a.size = u64_or(member(&j, "size"));
  a.kind = str_or(member(&j, "kind"));
  a.api = str_or(member(&j, "api"));
  a.device = as_device(member(&j, "device")).value_or(-1);
  a.thread = u64_or(member(&j, "thread"));
  a.age_ms = as_u64(member(&j, "age_ms"));
  a.stack_id = u64_or(member(&j, "stack_id"));
  return a;
}

json to_json(const std::vector<OomAllocation>& list) {
  json out = json::array();
  for (const auto& a : list) out.push_back(to_json(a));
  return out;
}

std::vector<OomAllocation> oom_allocations_from_json(const json* list, size_t& skipped) {
  std::vector<OomAllocation> out;
  skipped = 0;
  if (list == nullptr || !list->is_array()) return out;
  out.reserve(list->size());
  for (const auto& j : *list) {
    if (j.is_object())
      out.push_back(oom_allocation_from_json(j));
    else
      ++skipped;
  }
  return out;
}

// The event's keys are event_fields.h's, as event_json() wrote them.
const json* OomRecoveredBy::field(EventField f) const {
  return member(&event, std::string(event_field_name(f)).c_str());
}
std::string OomRecoveredBy::api() const { return str_or(field(EventField::Api)); }
uint64_t OomRecoveredBy::size() const { return u64_or(field(EventField::Size)); }
std::optional<uint64_t> OomRecoveredBy::t_ns() const { return as_u64(field(EventField::TimeNs)); }

json to_json(const OomMetadata& m) {
  json devices = json::array();
  for (const auto& d : m.devices) devices.push_back(to_json(d));
  json driver = nullptr;
  if (m.driver_memory) {
    driver = {{"device", m.driver_memory->device}, {"free", m.driver_memory->free}, {"total", m.driver_memory->total}};
  }
  json j = {
      {"schema_version", 1},
      {"reason", m.reason},
      {"request", request_json(m.request)},
      {"devices", devices},
      {"host_pinned_bytes", counter_json(m.host_pinned_bytes)},
      {"driver_memory", driver},
      {"live_count", m.live_count},
      {"live_bytes", m.live_bytes},
      {"largest_live", to_json(m.largest_live)},
      {"recovered", m.recovered},
      {"failures", m.failures},
      {"episode", m.episode},
  };
  if (m.recovered_by) j["recovered_by"] = m.recovered_by->event;
  if (const auto& l = m.device_limit) {
    j["device_limit"] = {{"device", l->device},   {"limit", l->limit},         {"held", l->held},
                         {"context", l->context}, {"requested", l->requested}, {"excess", l->excess()}};
  }
  if (m.framework) j["framework"] = to_json(*m.framework);
  return j;
}

std::optional<OomMetadata> oom_metadata_from_json(const json& j, std::string& problem, size_t& skipped_largest) {
  skipped_largest = 0;
  if (!j.is_object()) {
    problem = "is not a JSON object";
    return std::nullopt;
  }
  OomMetadata m;
  if (!read_request(member(&j, "request"), m.request, problem)) return std::nullopt;
  m.reason = str_or(member(&j, "reason"));
  for (const auto& d : array_or_empty(member(&j, "devices"))) {
    if (d.is_object()) m.devices.push_back(device_figures_from_json(d));
  }
  m.host_pinned_bytes = counter_from_json(member(&j, "host_pinned_bytes"));
  if (const json* dm = member(&j, "driver_memory"); dm != nullptr && dm->is_object()) {
    auto free = as_u64(member(dm, "free"));
    auto total = as_u64(member(dm, "total"));
    if (free && total)
      m.driver_memory = OomDriverMemory{as_device(member(dm, "device")).value_or(m.request.device), *free, *total};
  }
  m.live_count = u64_or(member(&j, "live_count"));
  m.live_bytes = u64_or(member(&j, "live_bytes"));
  m.largest_live = oom_allocations_from_json(member(&j, "largest_live"), skipped_largest);
  m.recovered = as_bool(member(&j, "recovered")).value_or(false);
  if (const json* by = member(&j, "recovered_by"); by != nullptr && by->is_object())
    m.recovered_by = OomRecoveredBy{*by};
  m.failures = u64_or(member(&j, "failures"), 1);
  m.episode = u64_or(member(&j, "episode"));
  if (const json* l = member(&j, "device_limit"); l != nullptr && l->is_object()) {
    m.device_limit = OomDeviceLimit{as_device(member(l, "device")).value_or(m.request.device),
                                    u64_or(member(l, "limit")), u64_or(member(l, "held")),
                                    u64_or(member(l, "context")), u64_or(member(l, "requested"))};
  }
  if (const json* f = member(&j, "framework"); f != nullptr && f->is_object())
    m.framework = framework_section_from_json(f, m.request.device);
  return m;
}

json to_json(const OomBundleManifest& m) {
  return {{"schema_version", 1}, {"bundle_name", m.bundle_name}, {"created_at_utc", m.created_at_utc},
          {"reason", m.reason},  {"backend", m.backend},         {"event_count", m.event_count},
          {"files", m.files},    {"tool", "gpumemprof"},         {"pid", or_null(m.pid)}};
}

OomBundleManifest oom_manifest_from_json(const json& j) {
  OomBundleManifest m;
  m.bundle_name = str_or(member(&j, "bundle_name"));
  m.created_at_utc = str_or(member(&j, "created_at_utc"));
  m.reason = str_or(member(&j, "reason"));
  m.backend = str_or(member(&j, "backend"));
  m.event_count = u64_or(member(&j, "event_count"));
  m.files = strings_in(member(&j, "files"));
  m.pid = as_u64(member(&j, "pid"));
  return m;
}

bool is_oom_manifest(const json& j) { return member(&j, "bundle_name") != nullptr; }

json oom_environment_json(json process, json devices, json environment) {
  process["devices"] = std::move(devices);
  process["environment"] = std::move(environment);
  return process;
}

OomEnvironment oom_environment_from_json(const json& j) {
  // The process's keys are the manifest's (process_json): read by the manifest's reader.
  ManifestRecord process;
  from_json(j, process);
  OomEnvironment e;
  e.exe = process.exe;
  e.host = process.host;
  e.argv = process.argv.value_or(std::vector<std::string>{});
  e.pid = process.pid;
  return e;
}

}  // namespace gmp
