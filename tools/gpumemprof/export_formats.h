// The formats of `gpumemprof export` (docs/exports.md). Each streams the whole trace from `replay`
// to `out`, one record at a time, and keeps no per-event state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "event_fields.h"
#include "export_replay.h"
#include "export_writer.h"
#include "run_directory_reader.h"

namespace gmp::tool::exporter {

// telemetry-v2's distributed identity, from the manifest's launcher fields (rank, local rank,
// world size, job id); --world-size supplies or overrides the world size.
struct Identity {
  uint64_t rank = 0, local_rank = 0, world_size = 1;
  std::string job_id;  // "": null
};

struct Context {
  const reader::RunDirectory& run;
  Replay& replay;
  Output& out;
  Identity identity;               // telemetry-v2 only
  uint64_t resolution_ns = 0;      // perfetto, telemetry-v2: counter points thinned (export_thinning.h); 0 none
  std::optional<uint64_t> min_size;  // csv, jsonl, perfetto, telemetry-v2: allocations kept in full detail
  uint64_t max_entries = 500'000;    // memory-viz: trace entries kept (export_memory_viz.cpp); 0 all
  reader::Progress* progress = nullptr;  // for the formats that replay the trace again
  std::vector<std::string> notes;  // said on stderr after the export
  std::string error;               // set by a format that found the input unreadable: the export exits 2
  std::string written;             // what was written, when not "N trace events"
};

// perfetto, telemetry-v2: `asked` (--resolution), else the default for the replay's trace and
// window (export_thinning.cpp), with a note when it thins.
void set_resolution(Context& ctx, std::optional<uint64_t> asked);

// The identity for telemetry-v2 from the manifest and --world-size; nullopt with `error` when they
// contradict (a rank outside the world). A missing world size is rank + 1, with a note; a missing
// local rank is the rank.
std::optional<Identity> telemetry_identity(const ManifestRecord& manifest, std::optional<uint64_t> world_size,
                                           std::vector<std::string>& notes, std::string& error);

// Writes `fields` of `e` into `o` under their names (event_fields.h); `t_ns` is the event's time.
void write_event_fields(JsonObject& o, const Event& e, uint64_t t_ns, std::span<const EventField> fields);

void write_csv(Context& ctx);
void write_jsonl(Context& ctx);
void write_perfetto(Context& ctx);
// One process's perfetto tracks, for write_perfetto() and a job's file (job_export.cpp): a track
// group `pid` named `name`, its times shifted by `offset_ns`, placed at `sort_index` among the
// groups when given. `first`: nothing is in the file's traceEvents array yet (updated).
struct PerfettoProcess {
  uint64_t pid = 0;
  std::string name;
  uint64_t offset_ns = 0;
  std::optional<uint64_t> sort_index;
};
void write_perfetto_process(Context& ctx, const PerfettoProcess& process, bool& first);
void write_telemetry_v2(Context& ctx);
void write_folded(Context& ctx);      // export_folded.cpp
void write_memory_viz(Context& ctx);  // export_memory_viz.cpp

// What the manifest says, with the trace header as the fallback for the pid.
uint64_t process_id(const Context& ctx);
std::optional<uint64_t> manifest_device_total(const Context& ctx, int device);

}  // namespace gmp::tool::exporter
