// The formats of `gpumemprof export` (docs/exports.md). Each streams the whole trace from `replay`
// to `out`, one record at a time, and keeps no per-event state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "export_replay.h"
#include "export_writer.h"
#include "run_directory_reader.h"

namespace gmp::tool::exporter {

// telemetry-v2's distributed identity. The manifest records the rank (from RANK and the like)
// but not the world size, which --world-size supplies.
struct Identity {
  uint64_t rank = 0, local_rank = 0, world_size = 1;
};

struct Context {
  const reader::RunDirectory& run;
  Replay& replay;
  Output& out;
  Identity identity;               // telemetry-v2 only
  std::vector<std::string> notes;  // said on stderr after the export
  std::string error;               // set by a format that found the input unreadable: the export exits 2
  std::string written;             // what was written, when not "N trace events"
};

// The identity for telemetry-v2 from the manifest and --world-size; nullopt with `error` when they
// contradict (a rank outside the world). A missing world size is rank + 1, with a note.
std::optional<Identity> telemetry_identity(const nlohmann::json& manifest, std::optional<uint64_t> world_size,
                                           std::vector<std::string>& notes, std::string& error);

void write_csv(Context& ctx);
void write_jsonl(Context& ctx);
void write_perfetto(Context& ctx);
void write_telemetry_v2(Context& ctx);
void write_folded(Context& ctx);  // export_folded.cpp

// What the manifest says, with the trace header as the fallback for the pid.
uint64_t process_id(const Context& ctx);
std::string manifest_string(const Context& ctx, const char* key);  // "" when absent
std::optional<uint64_t> manifest_device_total(const Context& ctx, int device);

}  // namespace gmp::tool::exporter
