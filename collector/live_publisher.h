// live.bin and the registry entry (docs/live.md): what `gpumemprof top` reads of a running process.
// The collector thread feeds every event it accounts (note) and, after each pass, lets this publish
// the figures (maybe_publish): at most every kMinIntervalNs while they change, and a heartbeat at
// least every live::kHeartbeatNs. The program's threads never touch any of it. The layout and the
// sequence lock are format/live_file.h's; this only fills the fields from the accounting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "accounting.h"
#include "config.h"
#include "live_file.h"
#include "live_registration.h"
#include "owned_dir.h"
#include "owned_file.h"
#include "process_record.h"

namespace gmp {

class LivePublisher {
 public:
  // Creates live.bin in the run directory (mode 0600, its disk allocated at once) and the registry
  // entry. With GPUMEMPROF_LIVE=0, or when the file cannot be made, nothing: a warning, and
  // profiling carries on without a live view.
  void open(const OwnedDir& run_dir, const Config& config, const ProcessInfo& info);
  bool is_open() const { return open_; }
  // Each event, once the accounting has taken it: the history's maxima, the notices, the tallies.
  void note(const Event& e, const Accounting& acc);
  // After a pass: publishes when the figures changed and kMinIntervalNs passed, or a heartbeat is due.
  void maybe_publish(uint64_t now_ns, const Accounting& acc, uint64_t lost);
  // The process is ending (or replacing its image): the final figures and how it ended. The entry
  // is removed unless a fatal signal ended it (`top` shows such a process as killed for a while).
  // After an exec that failed, the next publish a second later says Running again.
  void finish(live::State state, const Accounting& acc, uint64_t lost);

  static constexpr uint64_t kMinIntervalNs = 20'000'000;       // 50 publishes a second at most
  static constexpr uint64_t kMinTopIntervalNs = 500'000'000;   // the largest allocations, at most
  static constexpr uint64_t kExecGraceNs = 1'000'000'000;      // an exec that succeeds ends us by then

 private:
  int slot_of(int device);  // the device's slot in the file, claimed at first use; -1 beyond kDevices
  uint64_t realtime_of(uint64_t monotonic_ns) const;
  void fill(const Accounting& acc, uint64_t lost);
  void rebuild_top(const Accounting& acc, uint64_t now_ns);
  void roll_history(uint64_t second);
  void publish(uint64_t now_ns, const Accounting& acc, uint64_t lost);

  bool open_ = false;
  bool warned_ = false;
  OwnedFile file_;
  live::LiveFileWriter writer_;
  live::LiveFile* f_ = nullptr;  // the writer's copy (165 KiB: on the heap)
  LiveRegistration registration_;
  std::string registry_;
  int64_t realtime_offset_ = 0;   // realtime less monotonic at the start
  int8_t slots_[256];             // by ordinal: the slot, -1 none yet
  uint64_t ooms_[live::kDevices] = {}, alerts_[live::kDevices] = {};
  struct Levels {
    uint64_t allocated = 0, reserved = 0;
  };
  Levels levels_[live::kDevices];  // each slot's after the last event noted
  bool dirty_ = false, top_dirty_ = false;
  uint64_t last_publish_ns_ = 0, last_top_ns_ = 0, top_cost_ns_ = 0;
  uint64_t history_from_ = 0;     // the first second not yet written to the file (0: none pending)
  uint64_t exec_ns_ = 0;          // when finish(Exec) was said; 0 otherwise
  bool ended_ = false;            // finish() with an ending that is final
};

}  // namespace gmp
