// Writing OOM bundles to disk (docs/oom-bundles.md): a temporary directory filled and renamed into
// place, so a bundle is either complete or absent; directories 0700, files 0600. Everything is
// done through the descriptor of the bundles' directory that was checked (owned_dir.h): no path is
// looked up again, so renaming the directory, or swapping it or a bundle for a symlink, never
// sends a file (or a removal) of ours anywhere else.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "owned_dir.h"

namespace gmp {

struct BundleFile {
  std::string name;  // e.g. "metadata.json"
  nlohmann::json content;
};

// Opens the bundles' directory `dir` (created with mode 0700 if needed), reached by the rules of
// trusted_dir.h with `self` as our uid (the caller passes geteuid()), into `out`; refuses one that
// is a symlink, even ours, or not a directory. False with `error` set.
bool open_bundle_dir(const std::string& dir, OwnedDir& out, std::string& error, uid_t self);
// The same for the entry `name` of the run directory `run` (its `oom`), which is never looked up
// by path: a run directory that was moved gets its bundles where it is now, and one that was
// removed gets none (it is never created again).
bool open_bundle_subdir(const OwnedDir& run, const std::string& name, OwnedDir& out, std::string& error);

// Writes bundle `name` into `dir` with `files`. False with `error` set.
bool write_bundle(const OwnedDir& dir, const std::string& name, const std::vector<BundleFile>& files,
                  std::string& error);

// Replaces one file of bundle `name` of `dir` (a directory of ours, never a symlink) atomically.
// False with errno set.
bool rewrite_bundle_file(const OwnedDir& dir, const std::string& name, const BundleFile& file);

// Removes the oldest bundles of `dir` owned by `owner` (by modification time, then name) until at
// most `max_dumps` of them remain and they hold at most `max_bytes`; never the bundle `keep`.
// Bundles of other users are neither counted nor removed: in a shared OOM directory the limits
// apply per user. The caller passes geteuid(); tests pass another uid. Returns the paths removed.
std::vector<std::string> apply_retention(const OwnedDir& dir, uint64_t max_dumps, uint64_t max_bytes,
                                         const std::string& keep, uid_t owner);

// {NAME: value} of `envp`, each value as redact_env_value (redact.h) leaves it.
nlohmann::json redacted_environment(char** envp);

}  // namespace gmp
