// The live files of running processes (format/live_file.h) as `gpumemprof top` reads them
// (docs/live.md, "gpumemprof top"): where they are (the per-user registry, format/live_registry.h,
// or the run directories under a ROOT), whether their process still runs, and a cache so that
// thousands of ended processes cost nothing per refresh.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "live_file.h"

namespace gmp::reader {

// How a process stands. Running, Exited, Signalled and Exec are what the file's `state` says; Dead
// is a file that still says Running whose process is gone (killed by SIGKILL, crashed past the
// signal flush, its machine rebooted).
enum class Liveness { Running, Exited, Signalled, Exec, Dead };
const char* liveness_name(Liveness l);  // "running", "exited", "killed", "exec", "dead"

// What tells a process of this machine, boot and PID namespace from any other: a file that names
// all three can be checked against /proc; any other only by its heartbeat.
struct ThisMachine {
  std::string host;        // gethostname()
  std::string boot_id;     // /proc/sys/kernel/random/boot_id, without its newline
  uint64_t pid_namespace = 0;  // the inode of /proc/self/ns/pid
};
ThisMachine this_machine();

// The liveness of one snapshot at realtime `now_ns`. A Running file of this machine, boot and PID
// namespace is Dead when its pid is gone or is another process (its start ticks differ); any other
// Running file is Dead when its heartbeat is older than live::kStaleNs.
Liveness liveness_of(const live::LiveFile& f, const ThisMachine& here, uint64_t now_ns);

// One process found, with its latest snapshot.
struct LiveProcess {
  std::string run_dir;  // the directory live.bin was found in
  std::shared_ptr<const live::LiveFile> file;
  Liveness liveness = Liveness::Running;
  bool torn = false;    // the snapshot was never consistent (its writer died mid-publish): the last copy
};

struct LiveSources {
  std::optional<std::string> root;  // --root DIR: DIR itself a run directory, or those under it
  std::string registry;             // else this registry (live::registry_dir())
  uint64_t keep_ns = 60'000'000'000;  // ended and dead processes shown this long after their heartbeat
  bool all = false;                 // ... or for ever
  std::set<std::string> skip;       // run directories under ROOT not to show (run --live: earlier runs')
};

struct LiveScan {
  std::vector<LiveProcess> processes;  // those to show, by rank, then pid, then run directory
  std::vector<std::string> unreadable;  // "PATH: why", a line each (not a live file, not ours, ...)
  std::string error;  // the one line why nothing could be looked at (the registry refused), else empty
};

// Reads the processes of `sources` again on each refresh(). Kept between refreshes, per run
// directory: the live file's identity (device and inode) and its last snapshot, so that a process
// known to have ended is not read again, and a registry entry's target is read once.
class LiveReader {
 public:
  explicit LiveReader(LiveSources sources, ThisMachine here = this_machine());
  LiveScan refresh(uint64_t now_ns);
  // Live files read so far (each read_live_file() call): what the cache saves, for the tests.
  uint64_t files_read() const { return files_read_; }
  // Registry entries removed so far.
  uint64_t entries_removed() const { return entries_removed_; }

 private:
  struct Known {
    dev_t dev = 0;
    ino_t ino = 0;
    int64_t mtime_ns = -1;
    std::shared_ptr<const live::LiveFile> file;
    Liveness liveness = Liveness::Running;
    bool torn = false;
    bool seen = false;     // a snapshot of this dev/ino was taken (`file` may be dropped since)
    bool settled = false;  // ended, or dead by /proc: the snapshot cannot change
    bool gone = false;     // no live.bin there at the last look
    bool hidden = false;   // over for longer than the keep time: not shown, its snapshot dropped
    std::string registry_entry;  // its entry's name, when the registry named it
    std::string problem;  // why it could not be read, this refresh
  };
  void discover_registry(LiveScan& scan);
  bool discover_root(uint64_t now_ns);  // whether ROOT was searched again
  void update(const std::string& run_dir, Known& k, uint64_t now_ns);
  void remove_entry(Known& k);

  LiveSources sources_;
  ThisMachine here_;
  std::map<std::string, Known> known_;  // by run directory
  std::map<std::string, std::string> entry_targets_;  // registry entry name -> run directory
  uint64_t last_root_scan_ns_ = 0;
  int64_t root_mtime_ns_ = -1;
  int registry_fd_ = -1;  // the registry, while refresh() reads it
  uint64_t files_read_ = 0, entries_removed_ = 0;
};

}  // namespace gmp::reader
