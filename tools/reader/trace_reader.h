// Streaming reader for trace.gmpt (docs/trace-format.md). Reads in blocks, so memory stays
// bounded whatever the trace's length, and stops cleanly at a truncated tail. Opened through
// input_file.h: a FIFO, a device or a sparse file is refused before anything is read.
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

  // False with error() set when the file is missing, not a regular file, sparse, not a trace, or
  // of an unknown version.
  bool open(const std::string& path);
  const TraceHeader& header() const { return header_; }
  const std::string& error() const { return error_; }

  // Next whole event; false at the end (check truncated_bytes() for a partial final record) or
  // when the file turns out unreadable (failed(): a read error, or a corrupt stretch, below).
  // Records that are all zero or whose kind is not one this reader knows (a corrupt file) are
  // skipped and counted in invalid_events(), never returned: the accounting indexes its per-kind
  // tables by kind. The collector writes neither, so kMaxInvalidRun of them in a row mean the
  // file is not a trace any more (zeros a crashed filesystem left, a file extended by hand) and
  // reading stops there with an error rather than churn through gigabytes of nothing.
  bool next(Event& out);
  bool failed() const { return failed_; }
  uint64_t events_read() const { return read_; }
  uint64_t truncated_bytes() const { return truncated_; }
  uint64_t invalid_events() const { return invalid_; }
  // Whole records after the header, from the file's size when it was opened: what the file holds,
  // before reading it (summary.json's trace_events_written is compared with it).
  uint64_t records_in_file() const { return records_in_file_; }

  static constexpr uint64_t kMaxInvalidRun = 1 << 20;  // 64 MiB of records

 private:
  bool refill();

  FILE* file_ = nullptr;
  std::string path_;
  TraceHeader header_{};
  std::string error_;
  uint64_t records_in_file_ = 0;
  uint64_t invalid_run_ = 0;  // invalid records in a row
  bool failed_ = false;
  std::vector<Event> block_;
  size_t pos_ = 0;
  uint64_t read_ = 0;
  uint64_t truncated_ = 0;
  uint64_t invalid_ = 0;
  bool eof_ = false;
};

}  // namespace gmp::reader
