// libFuzzer target: the OOM bundle reader and the explanation `gpumemprof oom` builds from it.
//
// The input is fed as each of the bundle's JSON files in turn (manifest.json, metadata.json,
// allocations.json, environment.json), the other files being a small valid bundle, then as all of
// them at once; each parse that succeeds is explained and rendered as text and JSON. The input is
// also written to disk as a bundle's metadata.json and read back with read_oom_bundle(). Built
// with GMP_READER_NO_BACKSTOP, so an exception escaping the parser is a crash, not an error line.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "oom_bundle_reader.h"
#include "oom_facts.h"
#include "oom_render.h"

namespace {

const char* const kFiles[] = {"manifest.json", "metadata.json", "allocations.json", "environment.json"};

// A small valid bundle: a pool holding reserved memory, NVML figures, a recovered episode.
const gmp::reader::OomBundleFiles& baseline() {
  static const gmp::reader::OomBundleFiles files = {
      {"manifest.json",
       R"({"schema_version": 1, "bundle_name": "oom_dump_20260101T000000Z_42_cuda_1",
           "created_at_utc": "2026-01-01T00:00:00.000Z", "reason": "r", "backend": "cuda",
           "event_count": 3, "files": ["manifest.json", "metadata.json"], "tool": "gpumemprof", "pid": 42})"},
      {"metadata.json",
       R"({"schema_version": 1, "reason": "r",
           "request": {"api": "cuMemAllocAsync", "kind": "pool", "size": 536870912, "device": 0, "stream": 7,
                       "thread": 42, "error": 2, "error_name": "CUDA_ERROR_OUT_OF_MEMORY", "t_ns": 1000000},
           "devices": [{"device": 0, "name": "Fuzz", "total_bytes": 1073741824,
                        "allocated_bytes": {"current": 335544320, "peak": 402653184},
                        "reserved_bytes": {"current": 650117120, "peak": 650117120},
                        "by_kind": {"linear": {"current": 268435456, "peak": 268435456, "allocs": 1, "frees": 0},
                                    "pool": {"current": 67108864, "peak": 67108864, "allocs": 2, "frees": 1,
                                             "reserved": {"current": 381681664, "peak": 381681664},
                                             "released_by_pool_destroy": 0},
                                    "vmm": {"current": 0, "peak": 0, "allocs": 0, "frees": 0,
                                            "physical": {"current": 0, "peak": 0}},
                                    "array": {"current": 0, "peak": 0, "allocs": 0, "frees": 0},
                                    "managed": {"current": 0, "peak": 0, "allocs": 0, "frees": 0}},
                        "nvml": {"samples": 3, "device_used_bytes": 943718400, "device_total_bytes": 1073741824,
                                 "process_used_bytes": 650117120, "process_used_peak_bytes": 650117120,
                                 "processes": [{"pid": 42, "used_bytes": 650117120}, {"pid": 7, "used_bytes": 293601280}]},
                        "alloc_count": 3, "free_count": 1, "failed_alloc_count": 1}],
           "host_pinned_bytes": {"current": 4096, "peak": 4096},
           "driver_memory": {"device": 0, "free": 130023424, "total": 1073741824},
           "live_count": 3, "live_bytes": 335548416,
           "largest_live": [{"address": 1, "size": 268435456, "kind": "linear", "device": 0, "api": "cuMemAlloc_v2",
                             "thread": 42, "age_ms": 5, "stack_id": 3}],
           "recovered": true,
           "recovered_by": {"t_ns": 2000000, "op": "alloc", "kind": "pool", "api": "cuMemAllocAsync", "size": 536870912},
           "failures": 2, "episode": 1})"},
      {"allocations.json",
       R"([{"address": 1, "size": 268435456, "kind": "linear", "device": 0, "api": "cuMemAlloc_v2", "thread": 42,
            "age_ms": 5, "stack_id": 3},
           {"address": 2, "size": 67108864, "kind": "pool", "device": 0, "api": "cuMemAllocAsync", "thread": 43,
            "age_ms": 1, "stack_id": 0},
           {"address": 3, "size": 4096, "kind": "host_pinned", "device": -1, "api": "cuMemHostAlloc", "thread": 42,
            "age_ms": 9, "stack_id": 0}])"},
      {"environment.json",
       R"({"host": "h", "pid": 42, "ppid": 1, "exe": "/bin/x", "argv": ["x", "--y"], "cwd": "/", "rank": null,
           "cuda_driver_version": 13000, "devices": [], "environment": {"A": "b"}})"},
  };
  return files;
}

void explain(const gmp::reader::OomBundleFiles& files) {
  std::string error;
  auto bundle = gmp::reader::parse_oom_bundle("fuzz", files, error);
  if (!bundle) {
    if (error.empty() || error.find('\n') != std::string::npos) std::abort();  // one line, always
    return;
  }
  const gmp::analysis::OomExplanation x = gmp::analysis::explain_oom(*bundle);
  (void)gmp::tool::oom_explanation_text(x);
  (void)gmp::tool::oom_explanation_json(x).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::vector<gmp::reader::OomBundle> list{*bundle, *bundle};
  gmp::reader::sort_oom_bundles(list);
}

const std::string& bundle_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/gmp-fuzz-bundle-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    return tmpl;
  }();
  static const bool cleanup = std::atexit([] {
    unlink((bundle_dir() + "/metadata.json").c_str());
    rmdir(bundle_dir().c_str());
  }) == 0;
  (void)cleanup;
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  for (const char* name : kFiles) {
    gmp::reader::OomBundleFiles files = baseline();
    files[name] = input;
    explain(files);
  }
  gmp::reader::OomBundleFiles all;
  for (const char* name : kFiles) all[name] = input;
  explain(all);

  const std::string path = bundle_dir() + "/metadata.json";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) std::abort();
  if (size != 0 && write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  close(fd);
  std::string error;
  if (auto b = gmp::reader::read_oom_bundle(bundle_dir(), error)) (void)gmp::analysis::explain_oom(*b);
  return 0;
}
