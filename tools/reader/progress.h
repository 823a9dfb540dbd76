// A line on stderr now and then while a long replay runs (export, report, html over 10^7 events take
// tens of seconds): nothing for a run done within two seconds, then a line every five with the
// events read, the events expected and the percentage. Never on stdout, which may hold the output.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gmp::reader {

class Progress {
 public:
  // `command` names the line ("gpumemprof export"). GPUMEMPROF_PROGRESS_MS=N (for tests,
  // docs/testing.md) makes both the quiet start and the interval N milliseconds.
  explicit Progress(std::string command);

  // A pass over a trace of `events` records begins (every pass says so before its first record):
  // the line counts the records of the pass it is in, and names the pass from the second on.
  void expect(uint64_t events) {
    ++passes_;
    pass_start_ = done_;
    pass_total_ = events;
  }
  void tick() {
    if ((++done_ & (kCheckEvery - 1)) == 0) check();
  }

 private:
  static constexpr uint64_t kCheckEvery = 4096;  // events between looks at the clock
  void check();

  std::string command_;
  std::chrono::steady_clock::time_point start_, next_;
  std::chrono::milliseconds interval_;
  uint64_t done_ = 0;  // records read, all passes
  uint64_t passes_ = 0, pass_start_ = 0, pass_total_ = 0;
};

}  // namespace gmp::reader
