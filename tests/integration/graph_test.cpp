// CUDA graphs under the profiler (docs/accounting.md §Graph memory, docs/design.md §Never break a
// stream capture): prog_graphs captures in every mode and builds a graph by hand, through
// cuGetProcAddress as cudart does, against the fake driver, which invalidates a capture the way the
// real one does (tests/fake_driver/README.md, "Stream capture and graphs"). Every capture must
// complete, the program must print exactly what it prints without us, and the graph figures must be
// the fake's own attributes.
#include <gtest/gtest.h>

#include <cstdio>

#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1ull << 20;

const std::vector<std::string> kAllSteps = {"global", "thread_local", "relaxed", "explicit"};

std::vector<std::string> argv_of(const std::vector<std::string>& steps) {
  std::vector<std::string> argv = {Paths::bin("prog_graphs")};
  argv.insert(argv.end(), steps.begin(), steps.end());
  return argv;
}

// The program's own line: the fake's graph memory attributes at its end.
nlohmann::json program_line(const RunResult& r) { return nlohmann::json::parse(r.out, nullptr, false); }

const nlohmann::json& device0(const nlohmann::json& summary) { return summary["devices"][0]; }

TEST(GraphCapture, EveryModeCompletesAndTheProgramPrintsWhatItPrintsWithoutUs) {
  Sandbox box;
  for (const auto& devices : {"1", "2"}) {  // two devices: no stream is asked its device while capturing
    RunResult bare = box.run(argv_of(kAllSteps), {{"LD_PRELOAD", "<unset>"}, {"FAKE_CUDA_DEVICES", devices}});
    ASSERT_EQ(bare.exit_code, 0) << bare.err;
    RunResult profiled = box.run(argv_of(kAllSteps), {{"FAKE_CUDA_DEVICES", devices}});
    EXPECT_EQ(profiled.term_signal, 0);
    EXPECT_EQ(profiled.exit_code, 0) << profiled.err;
    EXPECT_EQ(profiled.out, bare.out);
    EXPECT_EQ(profiled.err, bare.err);
  }
}

TEST(GraphCapture, GraphMemoryIsTheDriversAndCapturedAllocationsAreNotPoolMemory) {
  Sandbox box;
  RunResult r = box.run(argv_of({"global", "thread_local", "relaxed", "explicit", "trim"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json fake = program_line(r);
  ASSERT_FALSE(fake.is_discarded()) << r.out;
  const nlohmann::json s = read_json_file(box.only_run_dir() + "/summary.json");
  const nlohmann::json& graph = device0(s)["by_kind"]["graph"];
  // The pool of graph memory, as the fake reports it: one launch of a captured graph maps 256 + 64
  // MiB, reused by every later launch and by the explicit graph (48 MiB); the trim keeps nothing.
  EXPECT_EQ(fake["reserved_high"], 320 * MiB);
  EXPECT_EQ(graph["reserved"]["peak"], fake["reserved_high"]);
  EXPECT_EQ(graph["reserved"]["current"], fake["reserved"]);
  EXPECT_EQ(graph["used"]["peak"], fake["used_high"]);
  EXPECT_EQ(graph["used"]["current"], fake["used"]);
  // Allocated: the 64 MiB that outlives each captured launch until the program frees it outside the
  // graph (15 launches), and the explicit graph's 16 MiB, freed by the next launch (auto-free) and
  // by cuMemFree after the last one.
  EXPECT_EQ(graph["peak"], 64 * MiB);
  EXPECT_EQ(graph["current"], 0u);
  EXPECT_EQ(graph["allocs"], 18u);
  EXPECT_EQ(graph["frees"], 18u);
  // The 256 MiB and 64 MiB asked for on the capturing stream were never pool memory: the pool saw
  // only the other thread's 8 MiB, once per capture.
  const nlohmann::json& pool = device0(s)["by_kind"]["pool"];
  EXPECT_EQ(pool["allocs"], 3u);
  EXPECT_EQ(pool["peak"], 8 * MiB);
  EXPECT_EQ(s["unknown_frees"], 0u);
  EXPECT_EQ(s["live_at_exit"]["count"], 0u);
  EXPECT_EQ(device0(s)["reserved_bytes"]["peak"].get<uint64_t>(), 320 * MiB + pool["reserved"]["peak"].get<uint64_t>());

  ASSERT_EQ(s["graphs"].size(), 4u);
  const char* modes[] = {"global", "thread_local", "relaxed"};
  for (int i = 0; i < 3; ++i) {
    const nlohmann::json& g = s["graphs"][i];
    EXPECT_EQ(g["graph"], i + 1);
    EXPECT_EQ(g["origin"], "capture");
    EXPECT_EQ(g["capture_mode"], modes[i]);
    EXPECT_EQ(g["device"], 0);
    EXPECT_EQ(g["alloc_nodes"], 2u);
    EXPECT_EQ(g["free_nodes"], 1u);
    EXPECT_EQ(g["bytes_per_launch"], 320 * MiB);
    EXPECT_EQ(g["outliving_bytes"], 64 * MiB);
    EXPECT_EQ(g["launches"], 5u);
    EXPECT_EQ(g["instantiations"], 1u);
    EXPECT_EQ(g["streams"], 1u);
    EXPECT_NE(g["stack_id"], 0u);
  }
  const nlohmann::json& x = s["graphs"][3];
  EXPECT_EQ(x["origin"], "explicit");
  EXPECT_TRUE(x["capture_mode"].is_null());
  EXPECT_EQ(x["bytes_per_launch"], 48 * MiB);
  EXPECT_EQ(x["outliving_bytes"], 16 * MiB);
  EXPECT_EQ(x["launches"], 3u);
}

TEST(GraphCapture, AGraphAllocationLiveAtExitIsALeakAndTheTraceRebuildsTheSameFigures) {
  Sandbox box;
  RunResult r = box.run(argv_of({"explicit", "leak"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = box.only_run_dir();
  const nlohmann::json s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["live_at_exit"]["count"], 1u);
  EXPECT_EQ(s["live_at_exit"]["bytes"], 16 * MiB);
  EXPECT_EQ(device0(s)["by_kind"]["graph"]["current"], 16 * MiB);
  EXPECT_EQ(device0(s)["allocated_bytes"]["current"], 16 * MiB);

  RunResult text = run_tool({"report", run});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("CUDA graphs: 1, 1 with memory nodes, 3 launches"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("built with cuGraphAdd* on device 0: 2 allocation nodes, 48.00 MiB per launch "
                          "(16.00 MiB outlive it); 3 launches on 1 stream"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("graph    16.00 MiB"), std::string::npos) << text.out;  // the leak, by kind

  // Without summary.json the figures come from the trace alone, and are the same.
  ASSERT_EQ(std::remove((run + "/summary.json").c_str()), 0);
  RunResult rebuilt = run_tool({"report", run, "--json"});
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
  const nlohmann::json j = nlohmann::json::parse(rebuilt.out);
  EXPECT_EQ(j["devices"][0]["by_kind"]["graph"], device0(s)["by_kind"]["graph"]);
  EXPECT_EQ(j["graphs"], s["graphs"]);
}

TEST(GraphCapture, CapturesInGlobalModeSurviveTheWatchdogsTrimOnTheCollectorThread) {
  // The watchdog trims pools from the collector's thread after a critical alert: cuMemPoolGetAttribute
  // and cuMemPoolTrimTo, unsafe while a global capture is open, so they must run in relaxed mode.
  Sandbox box;
  // The other thread's 8 MiB pool allocation passes the critical threshold while the capture is held open.
  RunResult r = box.run(argv_of({"global", "hold"}),
                        {{"FAKE_CUDA_CAPACITY", "400M"}, {"GPUMEMPROF_WATCHDOG", "trim"},
                         {"GPUMEMPROF_CRITICAL_PERCENT", "1"}, {"GPUMEMPROF_WARN_PERCENT", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_GE(s["alerts"]["critical"].get<uint64_t>(), 1u);
}

}  // namespace
}  // namespace gmp::test
