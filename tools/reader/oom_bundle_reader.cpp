#include "oom_bundle_reader.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "input_file.h"
#include "json_input.h"
#include "run_directory_files.h"
#include "trace_format.h"
#include "trace_reader.h"

namespace gmp::reader {
namespace {

using json = nlohmann::json;

// The file's text, or nullopt: missing (no `problem`), or not readable (`problem`, one line naming
// it: a FIFO named metadata.json must not block the tool).
std::optional<std::string> read_text(const std::string& path, std::string& problem) {
  bool missing = false;
  auto text = read_input_text(path, problem, &missing);
  if (missing) problem.clear();
  return text;
}

std::string last_component(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Parses an optional file: absent → note; unparseable or not an object/array → note.
const json* optional_file(const OomBundleFiles& files, const char* name, json& holder, bool want_array,
                          std::vector<std::string>& notes) {
  auto it = files.find(name);
  if (it == files.end()) {
    notes.push_back(std::string(name) + " is missing");
    return nullptr;
  }
  std::string problem;
  auto parsed = parse_json(it->second, problem);
  if (!parsed) {
    notes.push_back(std::string(name) + " is not valid JSON (" + problem + "); ignored");
    return nullptr;
  }
  if (want_array ? !parsed->is_array() : !parsed->is_object()) {
    notes.push_back(std::string(name) + " is not a JSON " + (want_array ? "array" : "object") + "; ignored");
    return nullptr;
  }
  holder = std::move(*parsed);
  return &holder;
}

std::optional<OomBundle> parse_checked(const std::string& path, const OomBundleFiles& files, std::string& error) {
  OomBundle b;
  b.path = path;
  b.name = last_component(path);
  const std::string where = path.empty() ? std::string() : path + "/";

  json manifest;
  if (optional_file(files, kOomManifestFile, manifest, false, b.notes)) {
    b.manifest = oom_manifest_from_json(manifest);
    if (!b.manifest->bundle_name.empty()) b.name = b.manifest->bundle_name;
    b.pid = b.manifest->pid;
  }

  auto meta = files.find(kOomMetadataFile);
  if (meta == files.end()) {
    error = where + "metadata.json is missing; expected an OOM bundle directory written by libgpumemprof "
            "(manifest.json, metadata.json, allocations.json, ...)";
    return std::nullopt;
  }
  std::string problem;
  auto metadata = parse_json(meta->second, problem);
  if (!metadata) {
    error = where + "metadata.json is not valid JSON (" + problem +
            "); expected the JSON object of an OOM bundle's metadata";
    return std::nullopt;
  }
  size_t skipped = 0;
  auto read = oom_metadata_from_json(*metadata, problem, skipped);
  if (!read) {
    error = where + "metadata.json " + problem + "; expected the metadata of an OOM bundle written by libgpumemprof "
            "(schema_version 1)";
    return std::nullopt;
  }
  b.metadata = std::move(*read);
  if (skipped) {
    b.notes.push_back("metadata.json: " + std::to_string(skipped) + " entries of largest_live are not objects");
  }

  json allocations;
  if (const json* a = optional_file(files, kOomAllocationsFile, allocations, true, b.notes)) {
    b.allocations = oom_allocations_from_json(a, skipped);
    if (skipped) b.notes.push_back("allocations.json: " + std::to_string(skipped) + " entries are not objects");
  }
  json tensors;
  if (files.contains(kOomTensorsFile)) {  // its absence is the rule: no note
    if (const json* t = optional_file(files, kOomTensorsFile, tensors, true, b.notes)) {
      b.tensors = oom_allocations_from_json(t, skipped);
      if (skipped) b.notes.push_back("tensors.json: " + std::to_string(skipped) + " entries are not objects");
    }
  }
  json environment;
  if (const json* e = optional_file(files, kOomEnvironmentFile, environment, false, b.notes)) {
    b.environment = oom_environment_from_json(*e);
    if (!b.pid) b.pid = b.environment->pid;
  }
  return b;
}

}  // namespace

const DeviceFigures* OomBundle::device_figures(int device) const {
  for (const auto& d : metadata.devices) {
    if (d.stats.device == device) return &d;
  }
  return nullptr;
}

std::optional<OomBundle> parse_oom_bundle(const std::string& path, const OomBundleFiles& files, std::string& error) {
#ifdef GMP_READER_NO_BACKSTOP
  return parse_checked(path, files, error);  // fuzzing: let any exception surface as a crash
#else
  try {
    return parse_checked(path, files, error);
  } catch (const std::exception& e) {  // not expected: the accessors above do not throw
    error = (path.empty() ? std::string() : path + ": ") + "cannot read the bundle (" + e.what() + ")";
    return std::nullopt;
  }
#endif
}

std::optional<OomBundle> read_oom_bundle(const std::string& dir, std::string& error) {
  if (!is_dir(dir)) {
    error = dir + " is not a directory; expected an OOM bundle directory (oom_dump_...)";
    return std::nullopt;
  }
  OomBundleFiles files;
  std::vector<std::pair<std::string, std::string>> unreadable;  // {name, "allocations.json is a FIFO, ..."}
  for (const char* name :
       {kOomManifestFile, kOomMetadataFile, kOomAllocationsFile, kOomEnvironmentFile, kOomTensorsFile}) {
    const std::string path = dir + "/" + name;
    std::string problem;
    if (auto text = read_text(path, problem)) {
      files[name] = std::move(*text);
    } else if (!problem.empty() && std::string(name) == kOomMetadataFile) {
      error = problem + "; expected the JSON file of an OOM bundle's metadata";
      return std::nullopt;
    } else if (!problem.empty()) {
      const size_t at = problem.find(path);  // named within the bundle, as the other notes are
      unreadable.emplace_back(name, at == std::string::npos ? problem : problem.replace(at, path.size(), name));
    }
  }
  auto b = parse_oom_bundle(dir, files, error);
  if (b) {
    for (auto& [name, note] : unreadable) {
      std::erase(b->notes, name + " is missing");  // what the parser, given no text, said of it
      b->notes.insert(b->notes.begin(), note);
    }
  }
  return b;
}

bool looks_like_oom_bundle(const std::string& dir) {
  struct stat st {};
  if (stat((dir + "/" + kOomMetadataFile).c_str(), &st) == 0) return true;
  if (last_component(dir).rfind(kOomBundlePrefix, 0) == 0 && !has_trace(dir))
    return true;
  std::string problem;
  auto text = read_text(dir + "/" + kOomManifestFile, problem);
  if (!text) return false;
  std::optional<json> manifest = parse_json(*text, problem);
  return manifest && is_oom_manifest(*manifest);
}

std::vector<std::string> list_oom_bundles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(kOomBundlePrefix, 0) != 0) continue;
    const std::string path = dir + "/" + name;
    if (is_dir(path)) out.push_back(path);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> run_oom_dirs(const std::string& run_dir, const ManifestRecord& manifest) {
  std::vector<std::string> out;
  const std::string default_dir = run_dir + "/" + kOomSubdirectory;
  if (is_dir(default_dir)) out.push_back(default_dir);
  std::string configured = manifest.config.oom_dir.value_or("");
  if (!configured.empty()) {
    if (configured[0] != '/') {
      const std::string& cwd = manifest.cwd;
      configured = (cwd.empty() ? run_dir : cwd) + "/" + configured;
    }
    if (is_dir(configured) && std::find(out.begin(), out.end(), configured) == out.end()) out.push_back(configured);
  }
  return out;
}

void sort_oom_bundles(std::vector<OomBundle>& bundles) {
  std::stable_sort(bundles.begin(), bundles.end(), [](const OomBundle& a, const OomBundle& b) {
    if (a.created_at_utc() != b.created_at_utc()) return a.created_at_utc() < b.created_at_utc();
    const uint64_t sa = oom_bundle_sequence(a.name), sb = oom_bundle_sequence(b.name);
    if (sa != sb) return sa < sb;
    return a.name < b.name;
  });
}

}  // namespace gmp::reader
