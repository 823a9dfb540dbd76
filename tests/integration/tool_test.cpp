// The gpumemprof command on run directories produced by the fake-driver programs.
#include <gtest/gtest.h>

#include "harness.h"
#include "scenario_expected.h"

namespace gmp::test {
namespace {

TEST(Tool, ReportOfAScenarioRun) {
  Sandbox box;
  ASSERT_EQ(box.run({Paths::bin("prog_linked")}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  RunResult text = run_tool({"report", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("device 0  Fake CUDA Device 0  (16.00 GiB total)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("allocated  peak 23.00 MiB"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("reserved   peak 24.00 MiB"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("leaks: live at exit 1 allocation, 8.00 MiB"), std::string::npos) << text.out;
  RunResult json = run_tool({"report", dir, "--json"});
  ASSERT_EQ(json.exit_code, 0);
  auto s = nlohmann::json::parse(json.out);
  EXPECT_EQ(s["rebuilt_from_trace"], false);
  EXPECT_EQ(s["devices"][0]["reserved_bytes"]["peak"], scenario::kDeviceReserved.peak);
}

TEST(Tool, Help) {
  EXPECT_EQ(run_tool({"--help"}).exit_code, 0);
  EXPECT_EQ(run_tool({"report", "--help"}).exit_code, 0);
}

}  // namespace
}  // namespace gmp::test
