// Appends events to the trace: segment files in the run directory (format/trace_format.h,
// docs/trace-format.md). Buffered in memory between flushes; flush() hands the bytes to the
// kernel, after which they survive the process being killed.
//
// Bounded (GPUMEMPROF_TRACE_MAX): a segment holds at most a set number of events; the next event
// starts a new segment whose header is followed by a checkpoint of the accounting state before
// that event, and the oldest segments are deleted first so that the files never add up to more
// than the cap. What is deleted is counted (summary.json "trace"); the figures are not affected.
//
// A write that fails (disk full, RLIMIT_FSIZE, our descriptor lost to the program and our file
// gone, a segment that cannot be created) ends tracing for the process: the partial write is cut
// off so each file stays whole records, the reason is said once on stderr, and every event from
// there on is counted as unwritten (summary.json "events"."unwritten", "trace_error").
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "event.h"
#include "owned_dir.h"
#include "owned_file.h"
#include "trace_format.h"

namespace gmp {

class TraceWriter {
 public:
  // Creates segment 0 in `dir` (which must outlive the writer); `max_bytes` 0 keeps one segment,
  // never cut.
  bool open(const OwnedDir& dir, const TraceHeader& header, uint64_t max_bytes);
  // True when the next event must go to a new segment: start_segment() with the accounting's
  // checkpoint from before that event, then append it.
  bool segment_full() const { return !failed_ && !closed_ && segment_events_ >= segment_limit_; }
  void start_segment(const std::string& checkpoint);
  void append(const Event& e);
  bool flush();
  // Flushes and closes the file for good, giving its descriptor back (the process is ending);
  // later events only count as unwritten.
  void close();
  size_t buffered() const { return buffer_.size(); }
  uint64_t written_events() const { return written_; }
  // Events appended that never reached the file.
  uint64_t unwritten_events() const { return unwritten_; }
  bool failed() const { return failed_; }
  // Why tracing stopped ("" while it has not).
  const std::string& error() const { return error_; }

  // What the cap did: segments written and deleted, the records they held, and when the oldest
  // kept segment starts (its first event's time; 0 while nothing was deleted).
  uint64_t segments_written() const { return next_segment_; }
  uint64_t segments_dropped() const { return dropped_segments_; }
  uint64_t events_dropped() const { return dropped_events_; }
  uint64_t kept_from_ns() const { return dropped_segments_ == 0 || kept_.empty() ? 0 : kept_.front().first_ns; }

 private:
  struct Segment {
    uint32_t index;
    uint64_t bytes;   // header, checkpoint and the events written to it
    uint64_t events;  // written to it
    uint64_t first_ns;
  };
  bool create_segment(const std::string& checkpoint);
  void drop_oldest();
  void fail(const std::string& what, int err);

  std::unique_ptr<OwnedFile> file_;
  const OwnedDir* dir_ = nullptr;
  TraceHeader header_{};
  uint64_t max_bytes_ = 0;
  uint64_t segment_limit_ = UINT64_MAX;  // events per segment
  uint64_t segment_events_ = 0;          // appended to the current segment, buffered ones included
  uint32_t next_segment_ = 0;
  std::deque<Segment> kept_;             // on disk, oldest first; the last is the current one
  std::vector<Event> buffer_;
  uint64_t written_ = 0;
  uint64_t unwritten_ = 0;
  uint64_t dropped_segments_ = 0, dropped_events_ = 0;
  bool failed_ = false;
  bool closed_ = false;
  std::string error_;
};

}  // namespace gmp
