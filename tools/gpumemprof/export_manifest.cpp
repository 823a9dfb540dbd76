// What the exports take from manifest.json. Every read tolerates a missing or odd manifest: a run
// killed early may have none, and the trace alone is enough to export.
#include "export_formats.h"

namespace gmp::tool::exporter {

uint64_t process_id(const Context& ctx) {
  const auto& m = ctx.run.manifest;
  if (m.is_object() && m.contains("pid") && m["pid"].is_number_unsigned()) return m["pid"].get<uint64_t>();
  return ctx.replay.header().pid;
}

std::string manifest_string(const Context& ctx, const char* key) {
  const auto& m = ctx.run.manifest;
  if (!m.is_object() || !m.contains(key) || !m[key].is_string()) return {};
  return m[key].get<std::string>();
}

std::optional<uint64_t> manifest_device_total(const Context& ctx, int device) {
  const auto& m = ctx.run.manifest;
  if (!m.is_object() || !m.contains("devices") || !m["devices"].is_array()) return std::nullopt;
  for (const auto& d : m["devices"]) {
    if (!d.is_object() || !d.contains("ordinal") || !d["ordinal"].is_number_integer() ||
        d["ordinal"].get<int64_t>() != device) {
      continue;
    }
    const auto& total = d.value("total_bytes", nlohmann::json());
    if (total.is_number_unsigned() && total.get<uint64_t>() > 0) return total.get<uint64_t>();
  }
  return std::nullopt;
}

}  // namespace gmp::tool::exporter
