// The shared scenario reaching the fake driver each way real processes do; every figure exact.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"
#include "run_directory_reader.h"
#include "scenario_expected.h"
#include "summary_builder.h"

namespace gmp::test {
namespace {

namespace sc = gmp::scenario;

constexpr const char* kScenarioOomLine =
    "gpumemprof: CUDA_ERROR_OUT_OF_MEMORY: cuMemAlloc_v2 of 1024.00 GiB (1099511627776 bytes) on device 0; OOM bundle "
    "written to ";

void expect_kind(const nlohmann::json& k, const sc::KindExpect& e, const char* name) {
  EXPECT_EQ(k["current"], e.current) << name;
  EXPECT_EQ(k["peak"], e.peak) << name;
  EXPECT_EQ(k["allocs"], e.allocs) << name;
  EXPECT_EQ(k["frees"], e.frees) << name;
}

// Every figure the scenario defines. A pool destroyed with an allocation live releases it without
// a free call: our frees count release calls and report the rest as released_by_pool_destroy.
void expect_scenario(const nlohmann::json& s) {
  ASSERT_EQ(s["devices"].size(), 1u) << s.dump(2);
  const auto& d = s["devices"][0];
  EXPECT_EQ(d["device"], sc::kDevice);
  EXPECT_EQ(d["allocated_bytes"]["current"], sc::kDeviceAllocated.current);
  EXPECT_EQ(d["allocated_bytes"]["peak"], sc::kDeviceAllocated.peak);
  EXPECT_EQ(d["reserved_bytes"]["current"], sc::kDeviceReserved.current);
  EXPECT_EQ(d["reserved_bytes"]["peak"], sc::kDeviceReserved.peak);
  const auto& k = d["by_kind"];
  expect_kind(k["linear"], sc::kLinear, "linear");
  sc::KindExpect pool = sc::kPool;
  pool.frees -= sc::kPoolFreesByDestroy;
  expect_kind(k["pool"], pool, "pool");
  EXPECT_EQ(k["pool"]["released_by_pool_destroy"], sc::kPoolFreesByDestroy);
  EXPECT_EQ(k["pool"]["reserved"]["current"], sc::kPoolReserved.current);
  EXPECT_EQ(k["pool"]["reserved"]["peak"], sc::kPoolReserved.peak);
  expect_kind(k["vmm"], sc::kVmm, "vmm");
  EXPECT_EQ(k["vmm"]["physical"]["current"], sc::kVmmPhysical.current);
  EXPECT_EQ(k["vmm"]["physical"]["peak"], sc::kVmmPhysical.peak);
  expect_kind(k["array"], sc::kArray, "array");
  expect_kind(k["managed"], sc::kManagedKind, "managed");
  EXPECT_EQ(d["alloc_count"], sc::kAllocCount);
  EXPECT_EQ(d["free_count"], sc::kFreeCount - sc::kPoolFreesByDestroy);
  EXPECT_EQ(d["failed_alloc_count"], sc::kFailedAllocCount);
  EXPECT_EQ(s["host_pinned_bytes"]["current"], sc::kHostPinned.current);
  EXPECT_EQ(s["host_pinned_bytes"]["peak"], sc::kHostPinned.peak);
  EXPECT_EQ(s["unknown_frees"], sc::kUnknownFrees);
  EXPECT_EQ(s["live_at_exit"]["count"], sc::kLiveAtExitCount);
  EXPECT_EQ(s["live_at_exit"]["bytes"], sc::kLiveAtExitBytes);
  EXPECT_EQ(s["events"]["lost"], 0);
  EXPECT_EQ(s["oom"], nlohmann::json({{"failures", 1}, {"bundles_written", 1}, {"recovered", 0}}));
}

uint64_t sum(const nlohmann::json& by_kind, const char* field = nullptr) {
  uint64_t total = 0;
  for (const auto& [_, v] : by_kind.items()) total += field ? v[field].get<uint64_t>() : v.get<uint64_t>();
  return total;
}

// Every breakdown `report --json` gives adds up to the figure it breaks down (issue 15, defect 6:
// managed memory was live at the allocated peak but no part of it).
void expect_breakdowns_add_up(const nlohmann::json& report) {
  const auto& a = report["analysis"];
  for (const auto& d : a["devices"]) {
    const auto& peak = d["allocated_peak"];
    EXPECT_EQ(sum(peak["by_kind"]), peak["bytes"]);
    EXPECT_EQ(sum(d["reserved_peak"]["by_kind"]), d["reserved_peak"]["bytes"]);
    const auto& live = d["live_at_peak"];
    EXPECT_EQ(live["bytes"], peak["bytes"]) << "live at the allocated peak";
    EXPECT_EQ(sum(live["by_kind"], "bytes"), live["bytes"]);
    EXPECT_EQ(sum(live["by_kind"], "count"), live["count"]);
    uint64_t sites = 0;
    for (const auto& site : d["sites_at_peak"]) sites += site["bytes"].get<uint64_t>();
    EXPECT_EQ(sites, live["bytes"]) << "call sites at the peak";
    EXPECT_EQ(d["flame"]["value"], live["bytes"]);
  }
  const auto& leaks = a["leaks"];
  EXPECT_EQ(leaks["bytes"], report["live_at_exit"]["bytes"]);
  EXPECT_EQ(leaks["count"], report["live_at_exit"]["count"]);
  EXPECT_EQ(sum(leaks["by_kind"], "bytes"), leaks["bytes"]);
  uint64_t sites = 0;
  for (const auto& site : a["leak_sites"]) sites += site["bytes"].get<uint64_t>();
  EXPECT_EQ(sites, leaks["bytes"]) << "call sites at exit";
}

class Scenario : public ::testing::TestWithParam<const char*> {};

TEST_P(Scenario, ExactFiguresThroughEveryAccessPath) {
  Sandbox box;
  RunResult r = box.run({Paths::bin(GetParam())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The scenario's deliberate 1 TiB request is the profiler's only message: the OOM bundle.
  EXPECT_EQ(r.err.find(kScenarioOomLine), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  const std::string dir = box.only_run_dir();
  const auto summary = read_json_file(dir + "/summary.json");
  EXPECT_EQ(summary["clean_exit"], true);
  expect_scenario(summary);
  EXPECT_EQ(summary["devices"][0]["name"], "Fake CUDA Device 0");
  EXPECT_EQ(summary["devices"][0]["total_bytes"], 16ull << 30);

  const auto manifest = read_json_file(dir + "/manifest.json");
  EXPECT_EQ(manifest["devices"][0]["name"], "Fake CUDA Device 0");
  EXPECT_EQ(manifest["config"]["ring_events"], 1 << 20);
  EXPECT_NE(manifest["exe"].get<std::string>().find(GetParam()), std::string::npos);

  // The trace alone implies the same figures.
  std::string error;
  auto rebuilt = reader::rebuild_summary(dir + "/trace.gmpt", manifest, nullptr, error);
  ASSERT_TRUE(rebuilt) << error;
  expect_scenario(*rebuilt);
  EXPECT_EQ((*rebuilt)["events"]["recorded"], summary["events"]["recorded"]);

  RunResult report = run_tool({"report", dir, "--json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto j = nlohmann::json::parse(report.out);
  EXPECT_EQ(j["analysis"]["devices"][0]["live_at_peak"]["bytes"], sc::kDeviceAllocated.peak);
  expect_breakdowns_add_up(j);
}

INSTANTIATE_TEST_SUITE_P(AccessPaths, Scenario,
                         ::testing::Values("prog_cudart_style", "prog_dlsym", "prog_linked", "prog_self_lookup"));

TEST(ScenarioOptions, DisabledShimIsAPurePassThrough) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_cudart_style")}, {{"GPUMEMPROF_ENABLE", "0"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(box.run_dirs().empty());
}

TEST(ScenarioOptions, InvalidVariableIsReportedOnceAndTheDefaultUsed) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_dlsym")}, {{"GPUMEMPROF_RING_EVENTS", "1000"}});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err.find("gpumemprof: invalid GPUMEMPROF_RING_EVENTS='1000': expected a power of two from 1024 to "
                       "67108864; using the default 1048576\n"),
            0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2);  // that line, then the scenario's OOM line
  const auto manifest = read_json_file(box.only_run_dir() + "/manifest.json");
  EXPECT_EQ(manifest["config"]["ring_events"], 1 << 20);
  expect_scenario(read_json_file(box.only_run_dir() + "/summary.json"));
}

TEST(ScenarioOptions, OutputTemplateAndNoOverwrite) {
  Sandbox box;
  const std::string tpl = box.dir() + "/runs/%e-%r";
  for (int i = 0; i < 2; ++i) {
    RunResult r = box.run({Paths::bin("prog_linked")}, {{"GPUMEMPROF_OUTPUT", tpl}, {"RANK", "5"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_TRUE(exists(box.dir() + "/runs/prog_linked-5/summary.json"));
  EXPECT_TRUE(exists(box.dir() + "/runs/prog_linked-5.1/summary.json"));
}

}  // namespace
}  // namespace gmp::test
