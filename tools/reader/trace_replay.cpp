#include "trace_replay.h"

#include <algorithm>

namespace gmp::reader {

bool TraceReplay::open(const std::string& path, std::string& error) {
  if (!trace_.open(path) || !trace_.seed(acc_)) {
    error = trace_.error();
    return false;
  }
  applied_ = trace_.first_event();  // positions count the deleted segments' events too
  return true;
}

bool TraceReplay::read(Event& e) {
  if (!trace_.next(e)) return false;
  if (progress_ != nullptr) progress_->tick();
  return true;
}

bool TraceReplay::begin_window() {
  if (begun_) return !failed();
  begun_ = true;
  const bool mid_run = trace_.starts_mid_run() && !keep_run_peaks_;
  if (window_.since_ns == 0 && !mid_run) return true;  // nothing before it: every peak is the window's already
  Event e;
  for (bool first = true; read(e); first = false) {
    // What the trace kept starts here: the window cannot start earlier.
    if (first && mid_run) window_.since_ns = std::max(window_.since_ns, since_start(e.timestamp_ns));
    if (since_start(e.timestamp_ns) >= window_.since_ns) {
      pending_ = e;
      has_pending_ = true;
      break;
    }
    acc_.apply(e);
    ++applied_;
  }
  acc_.reset_peaks(start_ns() + window_.since_ns);
  return !failed();
}

bool TraceReplay::next() {
  if (!begin_window() || ended_) return false;
  Event e;
  if (has_pending_) {
    e = pending_;
    has_pending_ = false;
  } else if (!read(e)) {
    ended_ = true;
    return false;
  }
  // Trace order, not timestamp order: threads' events may be out of order by microseconds.
  if (window_.after(since_start(e.timestamp_ns))) {
    ended_ = true;
    return false;
  }
  acc_.apply(e);
  ++applied_;
  event_ = e;
  return true;
}

}  // namespace gmp::reader
