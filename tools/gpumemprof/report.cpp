// `gpumemprof report DIR [--json]`: what a run used, from summary.json or, when the process died
// before writing it, from the trace.
#include "report.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "format.h"
#include "run_directory_reader.h"

namespace gmp::tool {
namespace {

constexpr const char* kUsage =
    "usage: gpumemprof report DIR [--json]\n"
    "  Per device: peak and final allocated and reserved memory, by kind; allocations live at exit;\n"
    "  failed allocations; unknown frees; event counts. DIR is a run directory written by\n"
    "  libgpumemprof.so. Without summary.json (a killed process) the figures are rebuilt from the trace.\n";

void print_text(const reader::RunDirectory& run) {
  const auto& s = run.summary;
  std::printf("gpumemprof report: %s\n", run.path.c_str());
  if (run.manifest.is_object()) {
    std::printf("  process %s (pid %llu)\n", run.manifest.value("exe", std::string("?")).c_str(),
                static_cast<unsigned long long>(json_u64(run.manifest, {"pid"})));
  }
  if (run.summary_rebuilt) {
    std::printf("  note: %s; figures rebuilt from the trace", run.rebuild_reason.c_str());
    if (run.trace_truncated_bytes) std::printf(" (last %llu bytes were a partial record)", (unsigned long long)run.trace_truncated_bytes);
    std::printf("\n");
  }
  for (const auto& d : s["devices"]) {
    std::printf("\ndevice %llu  %s  (%s total)\n", (unsigned long long)json_u64(d, {"device"}),
                d.value("name", std::string()).c_str(), human_bytes(json_u64(d, {"total_bytes"})).c_str());
    std::printf("  allocated  peak %-12s final %s\n", human_bytes(json_u64(d, {"allocated_bytes", "peak"})).c_str(),
                human_bytes(json_u64(d, {"allocated_bytes", "current"})).c_str());
    std::printf("  reserved   peak %-12s final %s\n", human_bytes(json_u64(d, {"reserved_bytes", "peak"})).c_str(),
                human_bytes(json_u64(d, {"reserved_bytes", "current"})).c_str());
    for (const char* kind : {"linear", "pool", "vmm", "array", "managed"}) {
      const auto& k = d["by_kind"][kind];
      if (json_u64(k, {"allocs"}) == 0 && json_u64(k, {"peak"}) == 0) continue;
      std::printf("    %-8s peak %-12s final %-12s allocs %llu frees %llu\n", kind, human_bytes(json_u64(k, {"peak"})).c_str(),
                  human_bytes(json_u64(k, {"current"})).c_str(), (unsigned long long)json_u64(k, {"allocs"}),
                  (unsigned long long)json_u64(k, {"frees"}));
    }
    std::printf("  allocations %llu, frees %llu, failed allocations %llu\n", (unsigned long long)json_u64(d, {"alloc_count"}),
                (unsigned long long)json_u64(d, {"free_count"}), (unsigned long long)json_u64(d, {"failed_alloc_count"}));
  }
  std::printf("\npinned host memory  peak %s final %s\n", human_bytes(json_u64(s, {"host_pinned_bytes", "peak"})).c_str(),
              human_bytes(json_u64(s, {"host_pinned_bytes", "current"})).c_str());
  std::printf("live at exit        %llu allocations, %s\n", (unsigned long long)json_u64(s, {"live_at_exit", "count"}),
              human_bytes(json_u64(s, {"live_at_exit", "bytes"})).c_str());
  std::printf("unknown frees       %llu\n", (unsigned long long)json_u64(s, {"unknown_frees"}));
  std::printf("events             %llu recorded, %llu lost, %llu producer waits\n",
              (unsigned long long)json_u64(s, {"events", "recorded"}), (unsigned long long)json_u64(s, {"events", "lost"}),
              (unsigned long long)json_u64(s, {"events", "producer_waits"}));
}

}  // namespace

int report_main(int argc, char** argv) {
  std::string dir;
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "gpumemprof report: unknown option '%s'; accepted: --json, --help\n", argv[i]);
      return 2;
    } else if (dir.empty()) {
      dir = argv[i];
    } else {
      std::fprintf(stderr, "gpumemprof report: one run directory expected, got '%s' too\n", argv[i]);
      return 2;
    }
  }
  if (dir.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string error;
  auto run = reader::open_run_directory(dir, error);
  if (!run) {
    std::fprintf(stderr, "gpumemprof report: %s\n", error.c_str());
    return 2;
  }
  if (json) {
    nlohmann::json out = run->summary;
    out["rebuilt_from_trace"] = run->summary_rebuilt;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_text(*run);
  }
  return 0;
}

}  // namespace gmp::tool
