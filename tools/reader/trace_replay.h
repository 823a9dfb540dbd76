// The one replay of a trace that every tool uses: it owns the TraceReader and the Accounting, and
// applies the time window (--since, --until; docs/report.md §Windows). Events before the window
// are applied silently, so the state where it starts is exact; from there the accounting's peaks
// are the window's (Accounting::reset_peaks); an event after it ends the replay. Events are read
// in blocks and never kept, so memory stays bounded by the live allocations.
//
// A trace whose oldest segments were deleted (GPUMEMPROF_TRACE_MAX) starts from the first kept
// segment's checkpoint (TraceReader::seed), so every figure is exact from there; it is then a
// window that starts at its first kept event (or later, with --since), unless keep_run_peaks()
// asked for the whole run's figures (a summary rebuilt from the trace).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "accounting.h"
#include "progress.h"
#include "trace_reader.h"

namespace gmp::reader {

// A stretch of the run, in nanoseconds since the profiler started (the trace header's start: the
// origin of every time the tools print). Both ends are included.
struct Window {
  uint64_t since_ns = 0;
  std::optional<uint64_t> until_ns;  // none: to the end of the trace
  bool whole() const { return since_ns == 0 && !until_ns; }
  bool after(uint64_t t_ns) const { return until_ns && t_ns > *until_ns; }
};

class TraceReplay {
 public:
  // False with a one-line `error` when the trace cannot be read.
  bool open(const std::string& path, std::string& error);
  void set_window(const Window& w) { window_ = w; }  // before the first event
  void set_progress(Progress* p) { progress_ = p; }   // ticked for every event read
  void keep_run_peaks() { keep_run_peaks_ = true; }   // before the first event
  // The window as replayed: for a trace that starts mid-run, from its first kept event at the
  // earliest (known once begin_window() ran).
  bool starts_mid_run() const { return trace_.starts_mid_run(); }

  // Applies the events before the window; from here the peaks are the window's. next() does it
  // first if no one did; a caller that shows the state at the window's start calls it itself.
  // False when the trace turned out unreadable.
  bool begin_window();
  // The next event of the window, applied; false at the end of the window or of the trace, or
  // where the trace turns out unreadable (failed(), with error()).
  bool next();

  const Event& event() const { return event_; }
  uint64_t index() const { return applied_; }  // 1-based position of event() in the trace
  const Accounting& accounting() const { return acc_; }
  const Window& window() const { return window_; }
  const TraceHeader& header() const { return trace_.header(); }
  uint64_t start_ns() const { return trace_.header().start_monotonic_ns; }
  uint64_t since_start(uint64_t ts) const { return ts > start_ns() ? ts - start_ns() : 0; }
  bool failed() const { return trace_.failed(); }
  const std::string& error() const { return trace_.error(); }
  uint64_t truncated_bytes() const { return trace_.truncated_bytes(); }
  const std::string& trace_path() const { return trace_.path(); }  // the segment read last
  uint64_t records_in_file() const { return trace_.records_in_file(); }
  std::string files_text() const { return trace_.files_text(); }

 private:
  bool read(Event& e);

  TraceReader trace_;
  Accounting acc_;
  Window window_;
  Progress* progress_ = nullptr;
  Event event_{}, pending_{};  // pending_: read by begin_window(), the window's first event
  bool has_pending_ = false, begun_ = false, ended_ = false, keep_run_peaks_ = false;
  uint64_t applied_ = 0;
};

}  // namespace gmp::reader
