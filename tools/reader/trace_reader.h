// Streaming reader for trace.gmpt (docs/trace-format.md). Reads in blocks, so memory stays
// bounded whatever the trace's length, and stops cleanly at a truncated tail.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "event.h"
#include "trace_format.h"

namespace gmp::reader {

class TraceReader {
 public:
  TraceReader() = default;
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // False with error() set when the file is missing, not a trace, or of an unknown version.
  bool open(const std::string& path);
  const TraceHeader& header() const { return header_; }
  const std::string& error() const { return error_; }

  // Next whole event; false at the end (check truncated_bytes() for a partial final record).
  // Records whose kind is not one this reader knows (a corrupt file) are skipped and counted in
  // invalid_events(), never returned: the accounting indexes its per-kind tables by kind.
  bool next(Event& out);
  uint64_t events_read() const { return read_; }
  uint64_t truncated_bytes() const { return truncated_; }
  uint64_t invalid_events() const { return invalid_; }

 private:
  bool refill();

  FILE* file_ = nullptr;
  TraceHeader header_{};
  std::string error_;
  std::vector<Event> block_;
  size_t pos_ = 0;
  uint64_t read_ = 0;
  uint64_t truncated_ = 0;
  uint64_t invalid_ = 0;
  bool eof_ = false;
};

}  // namespace gmp::reader
