// What the exports take from manifest.json. Every read tolerates a missing or odd manifest
// (manifest_record.h): a run killed early may have none, and the trace alone is enough to export.
#include "export_formats.h"

namespace gmp::tool::exporter {

uint64_t process_id(const Context& ctx) { return ctx.run.manifest.pid.value_or(ctx.replay.header().pid); }

std::optional<uint64_t> manifest_device_total(const Context& ctx, int device) {
  for (const DeviceEntry& d : ctx.run.manifest.devices) {
    if (d.ordinal == device && d.total_bytes.value_or(0) > 0) return d.total_bytes;
  }
  return std::nullopt;
}

}  // namespace gmp::tool::exporter
