// The binary trace (docs/trace-format.md): one or more segment files, `trace.gmpt` then
// `trace.000001.gmpt`, ... Each is a 64-byte header, a checkpoint of the accounting state at the
// segment's start (empty in segment 0), then 64-byte Event records appended as the collector drains
// the ring. A reader takes every whole record; a partial record at the end means the writer was
// killed mid-write. Under GPUMEMPROF_TRACE_MAX the oldest segments are deleted: a reader starts at
// the first segment kept, from its checkpoint.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "event.h"

namespace gmp {

inline constexpr char kTraceMagic[8] = {'G', 'M', 'P', 'T', 'R', 'A', 'C', 'E'};
// 1: one file, no checkpoint; 2: before CUDA graphs; 3: before the runtime kind (all still read)
inline constexpr uint32_t kTraceVersion = 4;
inline constexpr const char* kTraceFileName = "trace.gmpt";  // segment 0

// Segment n's file name: trace.gmpt for 0, else trace.<n, six digits or more>.gmpt.
inline std::string trace_segment_name(uint32_t segment) {
  if (segment == 0) return kTraceFileName;
  char name[32];
  std::snprintf(name, sizeof name, "trace.%06u.gmpt", segment);
  return name;
}
// The segment a file name names; nullopt for any other name.
inline std::optional<uint32_t> trace_segment_of(std::string_view name) {
  if (name == kTraceFileName) return 0;
  constexpr std::string_view prefix = "trace.", suffix = ".gmpt";
  if (name.size() < prefix.size() + 6 + suffix.size() || name.substr(0, prefix.size()) != prefix ||
      name.substr(name.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  const std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  uint64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || (n = n * 10 + static_cast<uint64_t>(c - '0')) > UINT32_MAX) return std::nullopt;
  }
  if (n == 0 || trace_segment_name(static_cast<uint32_t>(n)) != name) return std::nullopt;  // one spelling
  return static_cast<uint32_t>(n);
}

// GPUMEMPROF_TRACE_MAX (its least cap is settings/config_rules.h's): the segment size for a cap.
// Eight segments per cap: the kept window is at least seven eighths of it once the first segment
// was dropped.
inline constexpr uint64_t kSegmentsPerCap = 8;
inline uint64_t trace_segment_bytes(uint64_t trace_max) {
  return trace_max == 0 ? UINT64_MAX : trace_max / kSegmentsPerCap / 64 * 64;
}

struct TraceHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint32_t event_size;
  uint32_t pid;
  uint64_t start_realtime_ns;   // CLOCK_REALTIME when the session started
  uint64_t start_monotonic_ns;  // CLOCK_MONOTONIC at the same moment; event times are on this clock
  // Version 2 (zero in version 1, which is one segment without a checkpoint):
  uint32_t segment;             // 0, 1, ... in the order written
  uint32_t checkpoint_size;     // bytes of checkpoint after the header; events start at the next multiple of 64
  uint64_t first_event;         // records the run's trace held before this segment's first
  uint8_t reserved[8];
};
static_assert(sizeof(TraceHeader) == 64);

inline TraceHeader make_trace_header(uint32_t pid, uint64_t realtime_ns, uint64_t monotonic_ns) {
  TraceHeader h{};
  std::memcpy(h.magic, kTraceMagic, sizeof h.magic);
  h.version = kTraceVersion;
  h.header_size = sizeof(TraceHeader);
  h.event_size = sizeof(Event);
  h.pid = pid;
  h.start_realtime_ns = realtime_ns;
  h.start_monotonic_ns = monotonic_ns;
  return h;
}

// A checkpoint is padded with zeros to whole records, so events stay at 64-byte offsets.
inline uint64_t checkpoint_padded(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace gmp
