// OOM bundles (docs/oom-bundles.md) as the tools see them: the JSON files of one bundle read
// (format/oom_bundle_schema.h), and the bundles that belong to a run directory. Parsing never
// throws and never trusts the input: a wrong type, a missing key or an out-of-range number reads as
// "absent", and only what an explanation cannot do without (a parseable metadata.json with a request
// size) is an error, given as one line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifest_record.h"
#include "oom_bundle_schema.h"

namespace gmp::reader {

// One bundle: its files read through format/oom_bundle_schema.h.
struct OomBundle {
  std::string path;  // the bundle directory as given
  std::string name;  // manifest.json bundle_name, else the directory's last component
  std::optional<OomBundleManifest> manifest;  // manifest.json (optional)
  OomMetadata metadata;                       // metadata.json (required)
  // allocations.json (optional): every live allocation, every device.
  std::optional<std::vector<OomAllocation>> allocations;
  // tensors.json (written only in a bridged process): the framework's live tensors.
  std::optional<std::vector<OomAllocation>> tensors;
  std::optional<OomEnvironment> environment;  // environment.json (optional)
  std::optional<uint64_t> pid;                // manifest.json's, else environment.json's
  // Problems with the optional files, one line each ("allocations.json is missing").
  std::vector<std::string> notes;

  std::string created_at_utc() const { return manifest ? manifest->created_at_utc : std::string(); }
  const DeviceFigures* device_figures(int device) const;
};

// The bundle's JSON files by name ("metadata.json", ...), their text; a file that is absent from
// the map is missing. What the fuzzer and read_oom_bundle() feed to the same parser.
using OomBundleFiles = std::map<std::string, std::string>;

// Parses a bundle from its files' text. nullopt with `error` (one line, naming the file and what
// was expected) when metadata.json is missing, not JSON, or has no request with a size.
std::optional<OomBundle> parse_oom_bundle(const std::string& path, const OomBundleFiles& files, std::string& error);

// Reads <dir>/{manifest,metadata,allocations,environment,tensors}.json and parses them. events.json is not
// read (it can be large and nothing in an explanation needs it).
std::optional<OomBundle> read_oom_bundle(const std::string& dir, std::string& error);

// True when `dir` looks like a bundle: it holds a metadata.json, or a manifest.json with a
// bundle_name, or it is named oom_dump_* (and holds no trace.gmpt).
bool looks_like_oom_bundle(const std::string& dir);

// The bundle directories (oom_dump_*) directly under `dir`, sorted by name; temporary directories
// of bundles being written (.tmp.oom_dump_*) are not included.
std::vector<std::string> list_oom_bundles(const std::string& dir);

// Where a run directory's bundles are: <run>/oom, and the GPUMEMPROF_OOM_DIR that the run's
// manifest (config.oom_dir; relative paths from the run's cwd) records when one was set. Only
// directories that exist are returned. Bundles in a GPUMEMPROF_OOM_DIR may come from several
// processes: callers keep those whose pid is the run's (manifest.json "pid").
std::vector<std::string> run_oom_dirs(const std::string& run_dir, const ManifestRecord& manifest);

// Sorts bundles oldest first: by created_at_utc, then the sequence number at the end of the name,
// then the name.
void sort_oom_bundles(std::vector<OomBundle>& bundles);

}  // namespace gmp::reader
