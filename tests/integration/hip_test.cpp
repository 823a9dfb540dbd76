// AMD GPUs: HIP programs under the profiler on the fake HIP and HSA runtimes (tests/fake_hip,
// docs/rocm.md). prog_hip takes every allocation path; the figures below follow from the fake's
// rules (tests/fake_hip/README.md): what the program asked for at the HIP level, the runtime's own
// buffers (kind runtime) and the pools' reserves at the HSA level.
#include <gtest/gtest.h>

#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t KiB = 1ull << 10;
constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t kStaging = 64 * KiB;  // the fake's per-device buffer, made inside its first hipMalloc
constexpr uint64_t kStreamBuffer = MiB;   // the fake's per-stream kernel-argument buffer

struct HipRun {
  RunResult result;
  nlohmann::json summary;
  nlohmann::json fake;  // the program's own line: the fake's charged bytes at its end
};

HipRun run_hip(Sandbox& box, const std::vector<std::string>& steps, const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {Paths::bin("prog_hip")};
  argv.insert(argv.end(), steps.begin(), steps.end());
  HipRun r{box.run(argv, env)};
  const auto dirs = box.run_dirs();
  if (!dirs.empty()) r.summary = read_json_file(dirs.back() + "/summary.json");
  r.fake = nlohmann::json::parse(r.result.out, nullptr, false);
  return r;
}

const nlohmann::json& device(const nlohmann::json& s, int d) {
  for (const auto& dev : s["devices"]) {
    if (dev["device"] == d) return dev;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no device " << d << " in " << s.dump();
  return none;
}

TEST(Hip, TheProgramRunsAsWithoutUs) {
  Sandbox box;
  const std::vector<std::string> all = {"linear", "host", "pool", "array", "vmm", "lookups"};
  std::vector<std::string> argv = {Paths::bin("prog_hip")};
  argv.insert(argv.end(), all.begin(), all.end());
  RunResult bare = box.run(argv, {{"LD_PRELOAD", "<unset>"}});
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  RunResult profiled = box.run(argv);
  EXPECT_EQ(profiled.exit_code, 0) << profiled.err;
  EXPECT_EQ(profiled.out, bare.out);
  EXPECT_EQ(profiled.err, bare.err);
}

TEST(Hip, LinearMemoryIsWhatTheProgramAskedAndTheRuntimesBufferIsItsOwn) {
  Sandbox box;
  HipRun r = run_hip(box, {"linear"});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const nlohmann::json& d = device(r.summary, 0);
  EXPECT_EQ(d["name"], "Fake AMD GPU 0");
  EXPECT_EQ(d["total_bytes"], 16ull << 30);
  // 1 MiB + 3000 + pitched 1024 × 10 + 3D 256 × 4 × 2 + 8192 fine-grained, all live at once.
  const uint64_t asked = MiB + 3000 + 10240 + 2048 + 8192;
  const nlohmann::json& linear = d["by_kind"]["linear"];
  EXPECT_EQ(linear["peak"], asked);
  EXPECT_EQ(linear["current"], 3000u);
  EXPECT_EQ(linear["allocs"], 5u);
  EXPECT_EQ(linear["frees"], 4u);
  // The staging buffer the runtime made inside the first hipMalloc is its own, not the program's.
  const nlohmann::json& runtime = d["by_kind"]["runtime"];
  EXPECT_EQ(runtime["current"], kStaging);
  EXPECT_EQ(runtime["allocs"], 1u);
  EXPECT_EQ(d["allocated_bytes"]["peak"], asked);
  EXPECT_EQ(d["reserved_bytes"]["peak"], asked + kStaging);
  // Left live: the 3000 bytes; the runtime's buffer is no leak.
  EXPECT_EQ(r.summary["live_at_exit"]["count"], 1u);
  EXPECT_EQ(r.summary["live_at_exit"]["bytes"], 3000u);
  // The refused free of an unknown pointer is recorded and undone.
  EXPECT_EQ(r.summary["failed_releases"], 1u);
}

TEST(Hip, PinnedAndManagedMemory) {
  Sandbox box;
  HipRun r = run_hip(box, {"host"});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  // 3 × 4096 and 5000 live together; the 100 bytes come after the 5000 went, and stay.
  EXPECT_EQ(r.summary["host_pinned_bytes"]["peak"], 3 * 4096 + 5000u);
  EXPECT_EQ(r.summary["host_pinned_bytes"]["current"], 100u);
  const nlohmann::json& managed = device(r.summary, 0)["by_kind"]["managed"];
  EXPECT_EQ(managed["peak"], 2 * MiB);
  EXPECT_EQ(managed["current"], 0u);
}

TEST(Hip, PoolsReservedBytesAreTheHsaBlocksTheyHold) {
  Sandbox box;
  HipRun r = run_hip(box, {"pool"});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const nlohmann::json& d = device(r.summary, 0);
  const nlohmann::json& pool = d["by_kind"]["pool"];
  // 1 MiB + 3 MiB live together; then 3 MiB + 1000000 (a's block reused); later 2 MiB, then 5 MiB.
  EXPECT_EQ(pool["peak"], 5 * MiB);
  EXPECT_EQ(pool["allocs"], 5u);
  EXPECT_EQ(pool["frees"], 4u);
  EXPECT_EQ(pool["current"], 0u);
  // Reserved: 4 MiB in the default pool until the synchronisation, then the created pool's 2 MiB
  // (trimmed) and 5 MiB (released by its destruction).
  EXPECT_EQ(pool["reserved"]["peak"], 5 * MiB);
  EXPECT_EQ(pool["reserved"]["current"], 0u);
  EXPECT_EQ(pool["released_by_pool_destroy"], 1u);
  // The stream's kernel-argument buffer was the runtime's while the stream lived.
  EXPECT_EQ(d["by_kind"]["runtime"]["peak"], kStreamBuffer);
  EXPECT_EQ(d["by_kind"]["runtime"]["current"], 0u);
  EXPECT_EQ(d["reserved_bytes"]["peak"], 5 * MiB + kStreamBuffer);
  EXPECT_EQ(d["reserved_bytes"]["current"], 0u);
  EXPECT_EQ(r.fake["charged0"], 0u);
  EXPECT_EQ(r.summary["unknown_frees"], 0u);
}

TEST(Hip, ArraysAreTheRuntimesPaddedFootprint) {
  Sandbox box;
  HipRun r = run_hip(box, {"array"});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const nlohmann::json& array = device(r.summary, 0)["by_kind"]["array"];
  // Rows padded to 256 bytes: 512 × 10, 512 × 4 × 2 and 512 (the descriptors say 4000, 4096, 300).
  EXPECT_EQ(array["peak"], 5120 + 4096 + 512u);
  EXPECT_EQ(array["allocs"], 3u);
  EXPECT_EQ(array["frees"], 3u);
  EXPECT_EQ(device(r.summary, 0)["by_kind"]["runtime"]["allocs"], 0u);
}

TEST(Hip, VirtualMemoryStaysReservedUntilItsLastMappingGoes) {
  Sandbox box;
  HipRun r = run_hip(box, {"vmm"});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const nlohmann::json& vmm = device(r.summary, 0)["by_kind"]["vmm"];
  EXPECT_EQ(vmm["peak"], 4 * MiB);
  EXPECT_EQ(vmm["physical"]["peak"], 4 * MiB);
  EXPECT_EQ(vmm["physical"]["current"], 0u);
  EXPECT_EQ(vmm["current"], 0u);
}

TEST(Hip, AnOutOfMemoryFailureWritesItsBundleBeforeReturning) {
  Sandbox box;
  HipRun r = run_hip(box, {"oom"}, {{"FAKE_HIP_CAPACITY", "8M"}});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  ASSERT_EQ(r.summary["failed_allocations"].size(), 1u);
  const nlohmann::json& f = r.summary["failed_allocations"][0];
  EXPECT_EQ(f["api"], "hipMalloc");
  EXPECT_EQ(f["size"], 8 * MiB);
  EXPECT_EQ(r.summary["oom"]["bundles_written"], 1u);
  const nlohmann::json& d = device(r.summary, 0);
  EXPECT_EQ(d["total_bytes"], 8 * MiB);
  EXPECT_EQ(d["by_kind"]["linear"]["peak"], 4 * MiB);
}

TEST(Hip, HipGetProcAddressAndDlsymLeadToTheProfiler) {
  Sandbox box;
  HipRun r = run_hip(box, {"lookups"});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const nlohmann::json& linear = device(r.summary, 0)["by_kind"]["linear"];
  EXPECT_EQ(linear["allocs"], 2u);
  EXPECT_EQ(linear["frees"], 1u);
  EXPECT_EQ(linear["peak"], 16 * 4096u);
  EXPECT_EQ(linear["current"], 7 * 4096u);
}

TEST(Hip, EachDeviceIsTheOneHsaPutTheMemoryOn) {
  Sandbox box;
  HipRun r = run_hip(box, {"second_device"}, {{"FAKE_HIP_DEVICES", "2"}});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const nlohmann::json& d1 = device(r.summary, 1);
  EXPECT_EQ(d1["name"], "Fake AMD GPU 1");
  EXPECT_EQ(d1["by_kind"]["linear"]["peak"], 2 * MiB);
  EXPECT_EQ(d1["by_kind"]["runtime"]["current"], kStaging);
  EXPECT_EQ(r.summary["devices"].size(), 1u);  // nothing on device 0
}

TEST(Hip, WithoutHipAnHsaProgramsAllocationsAreItsOwn) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_hsa")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json s = read_json_file(box.only_run_dir() + "/summary.json");
  const nlohmann::json& linear = device(s, 0)["by_kind"]["linear"];
  EXPECT_EQ(linear["peak"], 2 * MiB);
  EXPECT_EQ(linear["allocs"], 2u);
  EXPECT_EQ(linear["frees"], 1u);
  EXPECT_EQ(s["live_at_exit"]["bytes"], 2 * MiB);
  EXPECT_EQ(device(s, 0)["by_kind"]["runtime"]["allocs"], 0u);
}

TEST(Hip, AHipRuntimeWithoutHsaIsRecordedAtTheHipLevelAndNamesItsDevices) {
  Sandbox box;
  // Its own directory first: the fake directory also holds the HSA-based libamdhip64.
  RunResult r = box.run({Paths::bin("prog_hip_only")}, {{"LD_LIBRARY_PATH", Paths::fake_dir() + "/hip_only"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json s = read_json_file(box.only_run_dir() + "/summary.json");
  const nlohmann::json& d = device(s, 0);
  EXPECT_EQ(d["name"], "HIP-only Fake GPU 0");
  EXPECT_EQ(d["total_bytes"], 1ull << 30);
  EXPECT_EQ(d["by_kind"]["linear"]["peak"], 12345 + 100u);
  EXPECT_EQ(d["by_kind"]["linear"]["current"], 100u);
  EXPECT_EQ(d["by_kind"]["runtime"]["allocs"], 0u);
}

TEST(Hip, NothingIsWrittenWhenProfilingIsOff) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_hip"), "linear", "pool"}, {{"GPUMEMPROF_ENABLE", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(box.run_dirs().empty());
}

}  // namespace
}  // namespace gmp::test
