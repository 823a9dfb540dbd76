// Streaming reader for the trace (docs/trace-format.md): a run directory's segment files in order,
// or one trace file. Reads in blocks, so memory stays bounded whatever the trace's length, and
// stops cleanly at a truncated tail. Files are opened through input_file.h: a FIFO, a device or a
// sparse file is refused before anything is read.
//
// Under GPUMEMPROF_TRACE_MAX the oldest segments are gone: the events then start mid-run, and
// seed() puts the accounting state at that point (the first kept segment's checkpoint) into an
// Accounting before the first event is applied to it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "accounting.h"
#include "event.h"
#include "input_file.h"
#include "trace_format.h"

namespace gmp::reader {

// Whether `dir` holds any trace segment file (trace.gmpt, trace.000001.gmpt, ...).
bool has_trace(const std::string& dir);

class TraceReader {
 public:
  TraceReader() = default;
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // `path`: a run directory (every kept segment, oldest first) or one trace file. False with
  // error() set when there is no trace, or a file is not a regular file, sparse, not a trace, of
  // an unknown version, or not a segment of the same run as the first. Of a running process's
  // trace, the segments kept when it is opened are read whole, whatever it deletes afterwards.
  bool open(const std::string& path);
  const TraceHeader& header() const { return header_; }  // the first kept segment's
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }  // the segment file being read (at the end: the last)

  // The state at the first event: into a new Accounting, before any event is applied to it.
  // Nothing to do when the trace starts at the run's start. False with error() when the
  // checkpoint cannot be read or is corrupt.
  bool seed(Accounting& acc);
  // The oldest segments were deleted (GPUMEMPROF_TRACE_MAX): the events start mid-run.
  bool starts_mid_run() const { return header_.first_event > 0 || header_.checkpoint_size > 0; }
  // Records the run's trace held before the first one read (in deleted segments).
  uint64_t first_event() const { return header_.first_event; }
  size_t segments() const { return segments_.size(); }
  // Where the events are, as messages name them: "trace.gmpt", or once the oldest segments were
  // deleted the kept ones' ("trace.000003.gmpt", "trace.000003.gmpt to trace.000005.gmpt").
  std::string files_text() const;
  // A later segment that does not continue the one before it (a file deleted by hand in the
  // middle, or of another run): reading stops before it. "" when none.
  const std::string& stopped_at() const { return stopped_at_; }

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
  // Whole records after the headers and checkpoints, from the files' sizes when they were opened:
  // what the trace holds, before reading it (summary.json's trace_events_written is compared with it).
  uint64_t records_in_file() const { return records_in_file_; }

  static constexpr uint64_t kMaxInvalidRun = 1 << 20;  // 64 MiB of records

 private:
  struct Segment {
    std::string path;
    TraceHeader header;
    uint64_t events_offset;  // where the records start
    uint64_t size;           // at open
    // Open from the listing on: a running process deletes its oldest segments as it writes
    // (GPUMEMPROF_TRACE_MAX), and a segment read by its path later could be gone by then.
    InputFile file;
  };
  // False with error_; `vanished_` when the file was deleted since it was listed.
  bool add_segment(const std::string& path, bool first);
  // Every segment of directory `dir`, oldest first; false with error_ (and vanished_).
  bool open_segments(const std::string& dir);
  bool open_segment(size_t i);
  bool refill();

  std::vector<Segment> segments_;
  size_t current_ = 0;
  uint64_t consumed_in_segment_ = 0;  // records taken from the open segment, invalid ones included
  FILE* file_ = nullptr;
  std::string path_;  // the open segment's
  TraceHeader header_{};
  std::string error_;
  std::string stopped_at_;
  uint64_t records_in_file_ = 0;
  uint64_t invalid_run_ = 0;  // invalid records in a row
  bool failed_ = false;
  bool vanished_ = false;
  std::vector<Event> block_;
  size_t pos_ = 0;
  uint64_t read_ = 0;
  uint64_t truncated_ = 0;
  uint64_t invalid_ = 0;
  bool eof_ = false;
};

}  // namespace gmp::reader
