#include "summary_figures.h"

namespace gmp::reader {
namespace {

using json = nlohmann::json;

// One line whatever the summary holds: a message with a line break would break the one-line rule.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return s;
}

}  // namespace

EventCounts event_counts(const Summary* summary, uint64_t records_in_trace, const std::string& trace_files) {
  EventCounts c;
  c.in_trace = records_in_trace;
  c.trace_files = trace_files;
  if (summary == nullptr) {
    c.final_flush = false;
    return c;
  }
  const Summary::Events& e = summary->events;
  c.recorded = e.recorded;
  c.lost = e.lost;
  c.unwritten = e.unwritten.value_or(0);
  c.producer_waits = e.producer_waits;
  c.trace_error = one_line(e.trace_error.value_or(""));
  c.written = summary->trace_events_written;
  return c;
}

std::vector<std::string> event_count_warnings(const EventCounts& c) {
  const std::string in_trace = std::to_string(c.in_trace);
  const std::string& files = c.trace_files;
  if (!c.final_flush) {
    return {
        "the process ended without its final flush (no summary.json): events recorded after the last trace write "
        "are missing and their number is unknown; figures are rebuilt from the " +
        in_trace + " events in " + files};
  }
  std::vector<std::string> out;
  if (c.unwritten > 0) {
    out.push_back("trace incomplete: " + std::to_string(c.unwritten) + " of " + std::to_string(c.recorded) +
                  " events were not written to " + files + (c.trace_error.empty() ? "" : " (" + c.trace_error + ")"));
  }
  if (const uint64_t missing = c.missing_from_file()) {
    out.push_back("trace truncated: " + files + (files.find(" to ") == std::string::npos ? " holds " : " hold ") +
                  in_trace + " events, " + std::to_string(missing) + " fewer than the " + std::to_string(*c.written) +
                  " summary.json says were written");
  }
  if (c.trace_incomplete()) {
    out.push_back("totals and peaks come from summary.json; what was live at the peaks and at exit, call sites and "
                  "timelines from the " + in_trace + " events in " + files);
  }
  if (c.lost > 0) {
    out.push_back(std::to_string(c.lost) + " events were lost: claimed in the ring but never published before the exit "
                  "wait ran out (a thread stopped mid-record); no figure includes them");
  }
  return out;
}

std::string event_counts_line(const EventCounts& c) {
  const std::string in_trace = std::to_string(c.in_trace) + " in " + c.trace_files;
  if (!c.final_flush) return in_trace + "; lost and unwritten unknown (no final flush)";
  return std::to_string(c.recorded) + " recorded, " + std::to_string(c.lost) + " lost, " + std::to_string(c.unwritten) +
         " unwritten, " + in_trace + ", " + std::to_string(c.producer_waits) + " producer waits";
}

json event_counts_json(const EventCounts& c) {
  auto known = [&c](uint64_t v) { return c.final_flush ? json(v) : json(nullptr); };
  return {{"final_flush", c.final_flush},
          {"recorded", known(c.recorded)},
          {"lost", known(c.lost)},
          {"unwritten", known(c.unwritten)},
          {"producer_waits", known(c.producer_waits)},
          {"trace_error", c.trace_error.empty() ? json(nullptr) : json(c.trace_error)},
          {"written", c.written ? json(*c.written) : json(nullptr)},
          {"in_trace", c.in_trace},
          {"missing_from_trace", c.missing_from_file()},
          {"trace_incomplete", c.trace_incomplete()},
          {"warnings", event_count_warnings(c)}};
}

}  // namespace gmp::reader
