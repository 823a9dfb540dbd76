// Appends events to the trace file. Buffered in memory between flushes; flush() hands the bytes to
// the kernel, after which they survive the process being killed.
//
// A write that fails (disk full, RLIMIT_FSIZE, our descriptor lost to the program and our file
// gone) ends tracing for the process: the partial write is cut off so the file stays a whole
// prefix of the run, the reason is said once on stderr, and every event from there on is counted
// as unwritten (summary.json "events"."unwritten", "trace_error"). Retrying later would leave a
// gap in the middle of the trace, which no reader could replay correctly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "event.h"
#include "owned_file.h"
#include "trace_format.h"

namespace gmp {

class TraceWriter {
 public:
  bool open(const std::string& path, const TraceHeader& header);
  void append(const Event& e) { buffer_.push_back(e); }
  bool flush();
  size_t buffered() const { return buffer_.size(); }
  uint64_t written_events() const { return written_; }
  // Events appended that never reached the file.
  uint64_t unwritten_events() const { return unwritten_; }
  bool failed() const { return failed_; }
  // Why tracing stopped ("" while it has not).
  const std::string& error() const { return error_; }

 private:
  void fail(const std::string& what, int err);

  OwnedFile file_;
  std::string path_;
  std::vector<Event> buffer_;
  uint64_t written_ = 0;
  uint64_t unwritten_ = 0;
  bool failed_ = false;
  std::string error_;
};

}  // namespace gmp
