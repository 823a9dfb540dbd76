// What the tools make of summary.json's event counts (docs/run-directory.md): whether trace.gmpt
// holds every event, said the same way by every command. The file itself is read by format/summary.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "summary.h"
#include "trace_format.h"

namespace gmp::reader {

// The run's events: counted by the collector, written to the trace, and found in it.
struct EventCounts {
  // False when there is no summary.json (the process was killed, called _exit or exec'd without
  // our hooks): the final flush never ran, so the events recorded after the last trace write are
  // missing, their number unknown, and so are lost and unwritten.
  bool final_flush = true;
  uint64_t recorded = 0;        // summary.json events.recorded
  uint64_t lost = 0;            // events.lost: claimed in the ring, never published
  uint64_t unwritten = 0;       // events.unwritten: counted, but a trace write failed or our descriptor was taken
  uint64_t producer_waits = 0;  // events.producer_waits
  std::string trace_error;      // events.trace_error: why a trace write failed (one line); empty when none did
  std::optional<uint64_t> written;  // trace_events_written; absent in runs older than the field
  uint64_t in_trace = 0;            // whole records the trace holds
  std::string trace_files = kTraceFileName;  // where they are (TraceReader::files_text())

  // Events summary.json says were written but the file does not hold (it was cut short since).
  uint64_t missing_from_file() const { return written && *written > in_trace ? *written - in_trace : 0; }
  // The trace lacks events the summary counted: its replay understates the run.
  bool trace_incomplete() const { return final_flush && (unwritten > 0 || missing_from_file() > 0); }
};

// `summary` nullptr when there is no summary.json (final_flush false); `trace_files` as
// TraceReader::files_text() names them.
EventCounts event_counts(const Summary* summary, uint64_t records_in_trace,
                         const std::string& trace_files = kTraceFileName);

// What the counts mean, one line each, said the same way by the report, the HTML page and
// `gpumemprof run`: nothing when the trace is whole and nothing was lost.
std::vector<std::string> event_count_warnings(const EventCounts& c);
// "101000 recorded, 0 lost, 100000 unwritten, 1000 in trace.gmpt, 2 producer waits"; without a
// final flush: "1000 in trace.gmpt; lost and unwritten unknown (no final flush)".
std::string event_counts_line(const EventCounts& c);
// The same as JSON: {"final_flush", "recorded", "lost", "unwritten", "producer_waits",
// "trace_error", "written", "in_trace", "missing_from_trace", "trace_incomplete", "warnings"};
// null for what is unknown.
nlohmann::json event_counts_json(const EventCounts& c);

}  // namespace gmp::reader
