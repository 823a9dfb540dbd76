// Writing OOM bundles to disk (docs/oom-bundles.md): a temporary directory filled and renamed into
// place, so a bundle is either complete or absent; directories 0700, files 0600, and no path that
// exists as a symlink is ever followed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

namespace gmp {

struct BundleFile {
  std::string name;  // e.g. "metadata.json"
  nlohmann::json content;
};

// Creates `dir` (mode 0700) if needed, reached by the rules of trusted_dir.h with `self` as our
// uid (the caller passes geteuid()); refuses one that is a symlink, even ours, or not a directory.
bool ensure_bundle_dir(const std::string& dir, std::string& error, uid_t self);

// Writes <dir>/<name>/ with `files`; returns the bundle's path, or nullopt with `error`.
std::optional<std::string> write_bundle(const std::string& dir, const std::string& name,
                                        const std::vector<BundleFile>& files, std::string& error);

// Replaces one file of an existing bundle atomically.
bool rewrite_bundle_file(const std::string& bundle, const BundleFile& file);

// Removes the oldest bundles of `dir` owned by `owner` (by modification time, then name) until at
// most `max_dumps` of them remain and they hold at most `max_bytes`; never `keep`. Bundles of other
// users are neither counted nor removed: in a shared OOM directory the limits apply per user. The
// caller passes geteuid(); tests pass another uid. Returns the paths removed.
std::vector<std::string> apply_retention(const std::string& dir, uint64_t max_dumps, uint64_t max_bytes,
                                         const std::string& keep, uid_t owner);

// {NAME: value} of `envp`, each value as redact_env_value (redact.h) leaves it.
nlohmann::json redacted_environment(char** envp);

}  // namespace gmp
