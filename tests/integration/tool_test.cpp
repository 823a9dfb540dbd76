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

// --help is status 0 with the usage on stdout, for the command and each subcommand. (What each
// refuses is in hostile_input_test.cpp.)
TEST(Tool, Help) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> rows = {
      {{"--help"}, "usage: gpumemprof COMMAND [ARGS]\n"},
      {{"run", "--help"}, "usage: gpumemprof run [options] -- COMMAND [ARGS...]\n"},
      {{"report", "--help"}, "usage: gpumemprof report DIR [--json] [--since T] [--until T]\n"},
      {{"diff", "--help"}, "usage: gpumemprof diff DIR_A DIR_B [--json]\n"},
      {{"export", "--help"}, "usage: gpumemprof export DIR --format FORMAT [-o FILE] [--since T] [--until T] "
                             "[--resolution D] [--min-size S]\n"},
      {{"html", "--help"}, "usage: gpumemprof html DIR -o FILE [--since T] [--until T]\n"},
      {{"oom", "--help"}, "usage: gpumemprof oom BUNDLE_OR_DIR [--json]\n"},
  };
  for (const auto& [args, usage] : rows) {
    RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 0) << args[0];
    EXPECT_EQ(r.out.rfind(usage, 0), 0u) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

}  // namespace
}  // namespace gmp::test
