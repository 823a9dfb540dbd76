// Prints scenario_expected.h in the shape of summary.json (docs/run-directory.md §summary.json), so scripts and
// integration tests can compare a run of any scenario program against it without parsing C++.
// Only keys this header defines are printed ("events" and "clean_exit" depend on the profiler).
#include <cinttypes>
#include <cstdio>

#include "scenario_expected.h"

namespace {

using namespace gmp::scenario;

void kind(const char* name, const KindExpect& k, const char* extra_name, const Watermark* extra,
          bool last) {
  std::printf("        \"%s\": {\"current\": %" PRIu64 ", \"peak\": %" PRIu64
              ", \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64,
              name, k.current, k.peak, k.allocs, k.frees);
  if (extra != nullptr) {
    std::printf(", \"%s\": {\"current\": %" PRIu64 ", \"peak\": %" PRIu64 "}", extra_name,
                extra->current, extra->peak);
  }
  std::printf("}%s\n", last ? "" : ",");
}

}  // namespace

int main() {
  std::printf("{\n  \"schema_version\": 1,\n  \"devices\": [\n    {\n");
  std::printf("      \"device\": %d,\n", kDevice);
  std::printf("      \"allocated_bytes\": {\"current\": %" PRIu64 ", \"peak\": %" PRIu64 "},\n",
              kDeviceAllocated.current, kDeviceAllocated.peak);
  std::printf("      \"reserved_bytes\": {\"current\": %" PRIu64 ", \"peak\": %" PRIu64 "},\n",
              kDeviceReserved.current, kDeviceReserved.peak);
  std::printf("      \"by_kind\": {\n");
  kind("linear", kLinear, nullptr, nullptr, false);
  kind("pool", kPool, "reserved", &kPoolReserved, false);
  kind("vmm", kVmm, "physical", &kVmmPhysical, false);
  kind("array", kArray, nullptr, nullptr, false);
  kind("managed", kManagedKind, nullptr, nullptr, true);
  std::printf("      },\n");
  std::printf("      \"alloc_count\": %" PRIu64 ",\n      \"free_count\": %" PRIu64
              ",\n      \"failed_alloc_count\": %" PRIu64 "\n",
              kAllocCount, kFreeCount, kFailedAllocCount);
  std::printf("    }\n  ],\n");
  std::printf("  \"host_pinned_bytes\": {\"current\": %" PRIu64 ", \"peak\": %" PRIu64 "},\n",
              kHostPinned.current, kHostPinned.peak);
  std::printf("  \"unknown_frees\": %" PRIu64 ",\n", kUnknownFrees);
  std::printf("  \"live_at_exit\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "},\n",
              kLiveAtExitCount, kLiveAtExitBytes);
  std::printf("  \"failed_request\": {\"api\": \"%s\", \"size\": %" PRIu64 ", \"device\": %d},\n",
              kFailedApi, kFailedRequest, kDevice);
  std::printf("  \"pool_frees_by_destroy\": %" PRIu64 "\n}\n", kPoolFreesByDestroy);
  return 0;
}
