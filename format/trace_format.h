// The binary trace file `trace.gmpt` (docs/trace-format.md): one 64-byte header, then 64-byte
// Event records appended as the collector drains the ring. A reader takes every whole record;
// a partial record at the end means the writer was killed mid-write.
#pragma once

#include <cstdint>
#include <cstring>

#include "event.h"

namespace gmp {

inline constexpr char kTraceMagic[8] = {'G', 'M', 'P', 'T', 'R', 'A', 'C', 'E'};
inline constexpr uint32_t kTraceVersion = 1;
inline constexpr const char* kTraceFileName = "trace.gmpt";

struct TraceHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint32_t event_size;
  uint32_t pid;
  uint64_t start_realtime_ns;   // CLOCK_REALTIME when the session started
  uint64_t start_monotonic_ns;  // CLOCK_MONOTONIC at the same moment; event times are on this clock
  uint8_t reserved[24];
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

}  // namespace gmp
