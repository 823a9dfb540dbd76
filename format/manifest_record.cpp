#include "manifest_record.h"

#include "event.h"
#include "json_fields.h"
#include "trace_format.h"
#include "value_text.h"

namespace gmp {
namespace {

using nlohmann::json;
using reader::member;

using reader::or_null;

// The process's fields, shared by manifest.json and process_json().
json process_fields(const ManifestRecord& m) {
  const auto text_or_null = [](const std::string& s) { return s.empty() ? json() : json(s); };
  return {{"pid", or_null(m.pid)},
          {"ppid", m.ppid},
          {"exe", m.exe},
          {"argv", or_null(m.argv)},
          {"cwd", m.cwd},
          {"host", m.host},
          {"rank", or_null(m.rank)},
          {"local_rank", or_null(m.local_rank)},
          {"world_size", or_null(m.world_size)},
          {"launcher", text_or_null(m.launcher)},
          {"job_id", text_or_null(m.job_id)},
          {"invocation", text_or_null(m.invocation)},
          {"cuda_driver_version", m.cuda_driver_version}};
}

std::optional<std::vector<std::string>> strings_of(const json* j) {
  if (j == nullptr || !j->is_array()) return std::nullopt;
  return reader::strings_in(j);
}

// Manifests before the launcher fields wrote the rank as a decimal string.
std::optional<uint64_t> rank_of(const json* j) {
  if (auto n = reader::as_u64(j)) return n;
  const std::optional<std::string> s = reader::as_string(j);
  return s ? parse_uint(*s) : std::nullopt;
}

}  // namespace

json to_json(const DeviceEntry& d) {
  return {{"ordinal", or_null(d.ordinal)}, {"name", or_null(d.name)}, {"total_bytes", or_null(d.total_bytes)}};
}

DeviceEntry device_entry_from_json(const json& j) {
  DeviceEntry d;
  d.ordinal = reader::as_device(member(&j, "ordinal"));
  d.name = reader::as_string(member(&j, "name"));
  d.total_bytes = reader::as_u64(member(&j, "total_bytes"));
  return d;
}

ManifestRecord process_manifest(const ProcessInfo& info) {
  ManifestRecord m;
  m.pid = static_cast<uint64_t>(info.pid);
  m.ppid = static_cast<uint64_t>(info.ppid);
  m.exe = info.exe;
  m.argv = info.argv;
  m.cwd = info.cwd;
  m.host = info.host;
  m.rank = info.job.rank;
  m.local_rank = info.job.local_rank;
  m.world_size = info.job.world_size;
  m.launcher = info.job.launcher;
  m.job_id = info.job.job_id;
  m.invocation = info.job.invocation;
  m.cuda_driver_version = info.cuda_driver_version;
  m.start_realtime_ns = info.start_realtime_ns;
  m.start_monotonic_ns = info.start_monotonic_ns;
  return m;
}

json to_json(const ManifestRecord& m) {
  json devices = json::array();
  for (const DeviceEntry& d : m.devices) devices.push_back(to_json(d));
  json j = process_fields(m);
  j.update({
      {"schema_version", 1},
      {"tool", "gpumemprof"},
      {"tool_version", m.tool_version},
      {"start_time_utc", m.start_time_utc},
      {"start_realtime_ns", m.start_realtime_ns},
      {"start_monotonic_ns", m.start_monotonic_ns},
      {"config", to_json(m.config)},
      {"devices", std::move(devices)},
      {"trace", {{"file", kTraceFileName}, {"version", kTraceVersion}, {"event_size", sizeof(Event)}}},
  });
  return j;
}

bool from_json(const json& j, ManifestRecord& out) {
  out = {};
  if (!j.is_object()) return false;
  out.pid = reader::as_u64(member(&j, "pid"));
  out.ppid = reader::u64_or(member(&j, "ppid"));
  out.exe = reader::str_or(member(&j, "exe"));
  out.argv = strings_of(member(&j, "argv"));
  out.cwd = reader::str_or(member(&j, "cwd"));
  out.host = reader::str_or(member(&j, "host"));
  out.rank = rank_of(member(&j, "rank"));
  out.local_rank = reader::as_u64(member(&j, "local_rank"));
  out.world_size = reader::as_u64(member(&j, "world_size"));
  out.launcher = reader::str_or(member(&j, "launcher"));
  out.job_id = reader::str_or(member(&j, "job_id"));
  out.invocation = reader::str_or(member(&j, "invocation"));
  out.cuda_driver_version = reader::as_i64(member(&j, "cuda_driver_version")).value_or(0);
  out.tool_version = reader::str_or(member(&j, "tool_version"));
  out.start_time_utc = reader::str_or(member(&j, "start_time_utc"));
  out.start_realtime_ns = reader::u64_or(member(&j, "start_realtime_ns"));
  out.start_monotonic_ns = reader::u64_or(member(&j, "start_monotonic_ns"));
  out.config = config_record_from_json(member(&j, "config"));
  for (const json& d : reader::array_or_empty(member(&j, "devices"))) out.devices.push_back(device_entry_from_json(d));
  return true;
}

json process_json(const ProcessInfo& info) { return process_fields(process_manifest(info)); }

}  // namespace gmp
