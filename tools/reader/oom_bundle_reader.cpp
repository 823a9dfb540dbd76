#include "oom_bundle_reader.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "input_file.h"
#include "json_fields.h"
#include "json_input.h"

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

// ---- The parts of a bundle ----

OomAllocation parse_allocation(const json& j) {
  OomAllocation a;
  a.address = u64_or(member(&j, "address"));
  a.size = u64_or(member(&j, "size"));
  a.kind = str_or(member(&j, "kind"));
  a.api = str_or(member(&j, "api"));
  a.device = as_device(member(&j, "device")).value_or(-1);
  a.thread = u64_or(member(&j, "thread"));
  a.age_ms = as_u64(member(&j, "age_ms"));
  a.stack_id = u64_or(member(&j, "stack_id"));
  return a;
}

// An array of allocations; entries that are not objects are skipped and counted.
std::vector<OomAllocation> parse_allocations(const json* list, size_t& skipped) {
  std::vector<OomAllocation> out;
  skipped = 0;
  if (list == nullptr || !list->is_array()) return out;
  out.reserve(list->size());
  for (const auto& j : *list) {
    if (j.is_object()) out.push_back(parse_allocation(j));
    else ++skipped;
  }
  return out;
}

uint64_t kind_current(const json* by_kind, const char* kind) { return u64_or(member(member(by_kind, kind), "current")); }

OomDeviceFigures parse_device(const json& j) {
  OomDeviceFigures d;
  d.device = as_device(member(&j, "device")).value_or(-1);
  d.name = str_or(member(&j, "name"));
  d.total_bytes = u64_or(member(&j, "total_bytes"));
  d.allocated = u64_or(member(member(&j, "allocated_bytes"), "current"));
  d.allocated_peak = u64_or(member(member(&j, "allocated_bytes"), "peak"));
  d.reserved = u64_or(member(member(&j, "reserved_bytes"), "current"));
  d.reserved_peak = u64_or(member(member(&j, "reserved_bytes"), "peak"));
  const json* by_kind = member(&j, "by_kind");
  d.linear = kind_current(by_kind, "linear");
  d.pool = kind_current(by_kind, "pool");
  d.vmm = kind_current(by_kind, "vmm");
  d.array = kind_current(by_kind, "array");
  d.managed = kind_current(by_kind, "managed");
  d.pool_reserved = u64_or(member(member(member(by_kind, "pool"), "reserved"), "current"));
  d.vmm_physical = u64_or(member(member(member(by_kind, "vmm"), "physical"), "current"));
  d.failed_alloc_count = u64_or(member(&j, "failed_alloc_count"));
  if (const json* n = member(&j, "nvml"); n != nullptr && n->is_object()) {
    OomDeviceFigures::Nvml nvml;
    nvml.samples = u64_or(member(n, "samples"));
    nvml.device_used = u64_or(member(n, "device_used_bytes"));
    nvml.device_total = u64_or(member(n, "device_total_bytes"));
    nvml.process_used = as_u64(member(n, "process_used_bytes"));
    if (const json* procs = member(n, "processes"); procs != nullptr && procs->is_array()) {
      nvml.has_process_list = true;
      for (const auto& p : *procs) {
        auto pid = as_u64(member(&p, "pid"));
        auto used = as_u64(member(&p, "used_bytes"));
        if (pid && used) nvml.processes.emplace_back(*pid, *used);
      }
    }
    d.nvml = std::move(nvml);
  }
  return d;
}

bool parse_metadata(const json& m, OomBundle& b, std::string& missing) {
  if (!m.is_object()) {
    missing = "is not a JSON object";
    return false;
  }
  const json* r = member(&m, "request");
  if (r == nullptr || !r->is_object()) {
    missing = "has no \"request\" object";
    return false;
  }
  auto size = as_u64(member(r, "size"));
  if (!size) {
    missing = "has no request size (\"request\": {\"size\": N})";
    return false;
  }
  b.request.size = *size;
  b.request.api = str_or(member(r, "api"));
  b.request.kind = str_or(member(r, "kind"));
  b.request.error_name = str_or(member(r, "error_name"));
  b.request.device = as_device(member(r, "device")).value_or(-1);
  b.request.stream = u64_or(member(r, "stream"));
  b.request.thread = u64_or(member(r, "thread"));
  b.request.error = as_i64(member(r, "error"));
  b.request.t_ns = as_u64(member(r, "t_ns"));
  if (b.reason.empty()) b.reason = str_or(member(&m, "reason"));

  if (const json* devices = member(&m, "devices"); devices != nullptr && devices->is_array()) {
    for (const auto& d : *devices) {
      if (d.is_object()) b.devices.push_back(parse_device(d));
    }
  }
  b.host_pinned_current = u64_or(member(member(&m, "host_pinned_bytes"), "current"));
  b.host_pinned_peak = u64_or(member(member(&m, "host_pinned_bytes"), "peak"));
  if (const json* dm = member(&m, "driver_memory"); dm != nullptr && dm->is_object()) {
    auto free = as_u64(member(dm, "free"));
    auto total = as_u64(member(dm, "total"));
    if (free && total) {
      b.driver_memory = OomBundle::DriverMemory{as_device(member(dm, "device")).value_or(b.request.device), *free, *total};
    }
  }
  b.live_count = u64_or(member(&m, "live_count"));
  b.live_bytes = u64_or(member(&m, "live_bytes"));
  size_t skipped = 0;
  b.largest_live = parse_allocations(member(&m, "largest_live"), skipped);
  if (skipped) b.notes.push_back("metadata.json: " + std::to_string(skipped) + " entries of largest_live are not objects");
  const json* rec = member(&m, "recovered");
  b.recovered = rec != nullptr && rec->is_boolean() && rec->get<bool>();
  if (const json* by = member(&m, "recovered_by"); by != nullptr && by->is_object()) {
    b.recovered_by = OomRecoveredBy{str_or(member(by, "api")), u64_or(member(by, "size")), as_u64(member(by, "t_ns"))};
  }
  b.failures = u64_or(member(&m, "failures"), 1);
  b.episode = u64_or(member(&m, "episode"));
  return true;
}

void parse_manifest(const json& m, OomBundle& b) {
  b.has_manifest = true;
  const std::string name = str_or(member(&m, "bundle_name"));
  if (!name.empty()) b.name = name;
  b.created_at_utc = str_or(member(&m, "created_at_utc"));
  b.reason = str_or(member(&m, "reason"));
  b.pid = as_u64(member(&m, "pid"));
}

void parse_environment(const json& e, OomBundle& b) {
  b.exe = str_or(member(&e, "exe"));
  b.host = str_or(member(&e, "host"));
  if (const json* argv = member(&e, "argv"); argv != nullptr && argv->is_array()) {
    for (const auto& a : *argv) {
      if (a.is_string()) b.argv.push_back(a.get<std::string>());
    }
  }
  if (!b.pid) b.pid = as_u64(member(&e, "pid"));
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
  if (optional_file(files, "manifest.json", manifest, false, b.notes)) parse_manifest(manifest, b);

  auto meta = files.find("metadata.json");
  if (meta == files.end()) {
    error = where + "metadata.json is missing; expected an OOM bundle directory written by libgpumemprof "
            "(manifest.json, metadata.json, allocations.json, ...)";
    return std::nullopt;
  }
  std::string problem;
  auto metadata = parse_json(meta->second, problem);
  if (!metadata) {
    error = where + "metadata.json is not valid JSON (" + problem + "); expected the JSON object of an OOM bundle's metadata";
    return std::nullopt;
  }
  std::string missing;
  if (!parse_metadata(*metadata, b, missing)) {
    error = where + "metadata.json " + missing + "; expected the metadata of an OOM bundle written by libgpumemprof "
            "(schema_version 1)";
    return std::nullopt;
  }

  json allocations;
  if (const json* a = optional_file(files, "allocations.json", allocations, true, b.notes)) {
    size_t skipped = 0;
    b.allocations = parse_allocations(a, skipped);
    b.has_allocations = true;
    if (skipped) b.notes.push_back("allocations.json: " + std::to_string(skipped) + " entries are not objects");
  }
  json environment;
  if (const json* e = optional_file(files, "environment.json", environment, false, b.notes)) parse_environment(*e, b);
  return b;
}

// The sequence number a bundle's name ends with (oom_dump_..._cuda_<seq>); 0 when none.
uint64_t name_sequence(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i == name.size() || name.size() - i > 18) return 0;
  return std::stoull(name.substr(i));
}

}  // namespace

const OomDeviceFigures* OomBundle::device_figures(int device) const {
  for (const auto& d : devices) {
    if (d.device == device) return &d;
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
  for (const char* name : {"manifest.json", "metadata.json", "allocations.json", "environment.json"}) {
    const std::string path = dir + "/" + name;
    std::string problem;
    if (auto text = read_text(path, problem)) {
      files[name] = std::move(*text);
    } else if (!problem.empty() && std::string(name) == "metadata.json") {
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
  if (stat((dir + "/metadata.json").c_str(), &st) == 0) return true;
  if (last_component(dir).rfind(kOomBundlePrefix, 0) == 0 && stat((dir + "/trace.gmpt").c_str(), &st) != 0) return true;
  std::string problem;
  auto text = read_text(dir + "/manifest.json", problem);
  if (!text) return false;
  std::optional<json> manifest = parse_json(*text, problem);
  return manifest && member(&*manifest, "bundle_name") != nullptr;
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

std::vector<std::string> run_oom_dirs(const std::string& run_dir, const nlohmann::json& manifest) {
  std::vector<std::string> out;
  if (is_dir(run_dir + "/oom")) out.push_back(run_dir + "/oom");
  std::string configured = str_or(member(member(&manifest, "config"), "oom_dir"));
  if (!configured.empty()) {
    if (configured[0] != '/') {
      const std::string cwd = str_or(member(&manifest, "cwd"));
      configured = (cwd.empty() ? run_dir : cwd) + "/" + configured;
    }
    if (is_dir(configured) && std::find(out.begin(), out.end(), configured) == out.end()) out.push_back(configured);
  }
  return out;
}

void sort_oom_bundles(std::vector<OomBundle>& bundles) {
  std::stable_sort(bundles.begin(), bundles.end(), [](const OomBundle& a, const OomBundle& b) {
    if (a.created_at_utc != b.created_at_utc) return a.created_at_utc < b.created_at_utc;
    const uint64_t sa = name_sequence(a.name), sb = name_sequence(b.name);
    if (sa != sb) return sa < sb;
    return a.name < b.name;
  });
}

}  // namespace gmp::reader
