// Appends events to the trace file. Buffered in memory between flushes; flush() hands the bytes to
// the kernel, after which they survive the process being killed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "event.h"
#include "trace_format.h"

namespace gmp {

class TraceWriter {
 public:
  TraceWriter() = default;
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  bool open(const std::string& path, const TraceHeader& header);
  void append(const Event& e);
  bool flush();
  size_t buffered() const { return buffer_.size(); }
  uint64_t written_events() const { return written_; }
  bool failed() const { return failed_; }

 private:
  int fd_ = -1;
  std::vector<Event> buffer_;
  uint64_t written_ = 0;
  bool failed_ = false;
};

}  // namespace gmp
