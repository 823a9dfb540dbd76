// The registry of live processes (docs/live.md, "Finding processes"): one directory per user on the
// machine in which each profiled process that uses CUDA keeps one entry while it runs, so that
// `gpumemprof top` finds every run directory with a live file without searching the disk.
//
// The directory is GPUMEMPROF_LIVE_REGISTRY when set, else /tmp/gpumemprof-UID (UID: the
// effective uid). It must be a directory owned by that uid that no one else may enter (mode 0700):
// the collector creates it so, and refuses (one warning, no entry) one that is not; `top` does not
// read one that is not. An entry is a symbolic link named PID.START_TICKS (START_TICKS: field 22 of
// /proc/PID/stat, so a reused pid never takes an old entry for its own) whose target is the run
// directory's absolute path. The collector removes its entry when the process exits or replaces its
// image; the entries of processes that died are removed by the readers that find them dead.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace gmp::live {


// The registry's path: `configured` (GPUMEMPROF_LIVE_REGISTRY's value) when not empty, else
// /tmp/gpumemprof-UID.
std::string registry_dir(const std::string& configured, uid_t uid);

// "PID.START_TICKS", and back (nullopt for any other name: not an entry of ours).
std::string registry_entry_name(uint64_t pid, uint64_t start_ticks);
struct RegistryEntry {
  uint64_t pid = 0, start_ticks = 0;
};
std::optional<RegistryEntry> parse_registry_entry_name(const std::string& name);

// Whether `st` (of the registry, by lstat or fstat) is a directory of `uid` with no permission for
// group or others; false with `why` ("owned by uid 1001", "mode 0755: others may enter it", ...).
bool private_directory(const struct stat& st, uid_t uid, std::string& why);

// Field 22 of /proc/PID/stat (the process's start time in clock ticks since boot); nullopt when the
// process does not exist (or /proc is not mounted).
std::optional<uint64_t> process_start_ticks(uint64_t pid);

}  // namespace gmp::live
