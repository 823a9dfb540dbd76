// The profiler's descriptors against the program's RLIMIT_NOFILE (issue 28, docs/architecture.md
// "Staying out of the program's way"): a program that used up its descriptors still gets its
// summary.json, so its normal exit is not taken for a crash, and under a low limit ours sit at the
// top of the range, leaving the numbers the program takes first as they are without us.
#include <gtest/gtest.h>

#include "harness.h"

namespace gmp::test {
namespace {

// Before, the collector kept the trace, attribution.jsonl and the log open and had no descriptor
// left for summary.json: the report then said the process died. Now the trace and
// attribution.jsonl are closed first, and .reserve holds one descriptor back for it as it holds
// space. The pause lets the collector write the allocation's records before the program takes
// every descriptor.
TEST(Descriptors, AProgramThatUsedUpItsDescriptorsStillGetsItsSummary) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "nofile:64", "alloc:1M", "sleep:100", "exhaust_fds"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(r.err, "");
  const std::string run = box.only_run_dir();
  const auto s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["ended_by"], "exit");
  EXPECT_EQ(s["exit_status"], 0);
  EXPECT_EQ(s["devices"][0]["alloc_count"], 1);
  EXPECT_FALSE(exists(run + "/.reserve"));
  RunResult report = run_tool({"report", run});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(report.out.find("died"), std::string::npos) << report.out;
}

// Before, under a limit of 64 (at most 900: no room for our usual numbers), our three files took 3,
// 4 and 5, and the program's next open() returned 6. The pause lets the collector finish what it
// opens for a moment (the manifest's rewrite for the new device, attribution.jsonl), which would
// take the lowest free number meanwhile.
TEST(Descriptors, UnderALowLimitOursLeaveTheProgramsLowNumbersAlone) {
  Sandbox box;
  const std::vector<std::string> ops = {Paths::bin("prog_ops"), "nofile:64", "open_null", "alloc:1M", "sleep:100",
                                        "open_null"};
  RunResult bare = box.run(ops, {{"GPUMEMPROF_ENABLE", "0"}});
  RunResult profiled = box.run(ops, {{"GPUMEMPROF_SAMPLE_MS", "0"}});
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(profiled.exit_code, 0) << profiled.err;
  EXPECT_EQ(profiled.out, bare.out);
  EXPECT_EQ(profiled.err, "");
  EXPECT_TRUE(exists(box.only_run_dir() + "/summary.json"));
}

}  // namespace
}  // namespace gmp::test
