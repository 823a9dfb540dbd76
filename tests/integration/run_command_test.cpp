// `gpumemprof run`: the launcher around a profiled command.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include "harness.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

std::vector<std::string> dirs_under(const std::string& root) {
  std::vector<std::string> out;
  const std::string cmd = "ls -1 " + root + " 2>/dev/null";
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char line[512];
    while (fgets(line, sizeof line, p)) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      out.push_back(root + "/" + s);
    }
    pclose(p);
  }
  return out;
}

TEST(RunCommand, KeepsTheExitStatusAndPrintsTheNextCommand) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {Paths::bin("prog_lifecycle"), "exit-thread"}), tool_env());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto dirs = dirs_under(root);
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_NE(r.err.find("gpumemprof: 1 profiled process under " + root), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("device 0: peak allocated 3.00 MiB, peak reserved 3.00 MiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("next: gpumemprof report " + dirs[0]), std::string::npos) << r.err;
  EXPECT_EQ(read_json_file(dirs[0] + "/summary.json")["devices"][0]["alloc_count"], 2);
}

// -o naming a file that is no directory would profile nothing: refused before the command runs.
TEST(RunCommand, AnOutputThatIsNoDirectoryIsRefusedBeforeTheCommandRuns) {
  Sandbox box;
  const std::string file = box.dir() + "/a-file", marker = box.dir() + "/ran";
  std::ofstream(file) << "not a directory\n";
  RunResult r = box.run({Paths::tool(), "run", "-o", file, "--", "/bin/touch", marker}, tool_env());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "gpumemprof run: -o " + file + " is not a directory; give a directory (created if missing)\n");
  struct stat st {};
  EXPECT_NE(stat(marker.c_str(), &st), 0) << "the command ran";
}

// A command that never allocates leaves nothing behind: the directory the run made is removed,
// and one it did not make is kept.
TEST(RunCommand, ARunThatProfiledNothingLeavesNoEmptyDirectory) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {"/bin/true"}), tool_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "\ngpumemprof: 0 profiled processes under " + root + "\n  (no process allocated GPU memory)\n" +
                       "  the empty directory " + root + " is removed\n");
  struct stat st {};
  EXPECT_NE(stat(root.c_str(), &st), 0);
  ASSERT_EQ(mkdir(root.c_str(), 0700), 0);
  r = box.run(run_args(root, {"/bin/true"}), tool_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("is removed"), std::string::npos) << r.err;
  EXPECT_EQ(stat(root.c_str(), &st), 0);
}

TEST(RunCommand, EveryCudaProcessOfAScriptGetsItsOwnDirectory) {
  Sandbox box;
  const std::string script = box.dir() + "/two.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho \"$LD_PRELOAD\" > " << box.dir() << "/preload.txt\n"
      << Paths::bin("prog_ops") << " alloc:1M >/dev/null\n"
      << Paths::bin("prog_ops") << " alloc:2M >/dev/null\n"
      << Paths::bin("prog_lifecycle") << " no-cuda\n";
  }
  chmod(script.c_str(), 0755);
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {script}), tool_env({{"LD_PRELOAD", "/lib/x86_64-linux-gnu/libm.so.6"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dirs_under(root).size(), 2u);  // the process that never used CUDA left nothing
  EXPECT_NE(r.err.find("2 profiled processes"), std::string::npos) << r.err;
  std::ifstream p(box.dir() + "/preload.txt");
  std::string preload;
  std::getline(p, preload);
  EXPECT_EQ(preload, Paths::shim() + ":/lib/x86_64-linux-gnu/libm.so.6");  // prepended, not replaced
}

TEST(RunCommand, ACommandKilledByASignalTakesTheLauncherWithIt) {
  Sandbox box;
  RunResult r = box.run(run_args(box.dir() + "/runs", {Paths::bin("prog_lifecycle"), "sigterm"}), tool_env());
  EXPECT_EQ(r.term_signal, SIGTERM) << r.err;
}

TEST(RunCommand, SignalsArePassedToTheCommand) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  int out = -1;
  pid_t pid = box.spawn(run_args(root, {Paths::bin("prog_lifecycle"), "wait-signal"}), tool_env(), &out);
  ASSERT_EQ(read_line(out, 30000), "ready");
  kill(pid, SIGINT);
  RunResult r = wait_for(pid, out, -1, 30);
  close(out);
  EXPECT_EQ(r.term_signal, SIGINT);
  auto dirs = dirs_under(root);
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(read_json_file(dirs[0] + "/summary.json")["terminated_by_signal"], SIGINT);
}

TEST(RunCommand, OptionsReachTheProfiledProcess) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {Paths::bin("prog_ops"), "alloc:100M"}, {"--warn-percent", "1", "--sample-ms", "0"}),
                        tool_env({{"FAKE_CUDA_CAPACITY", "1G"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto dirs = dirs_under(root);
  ASSERT_EQ(dirs.size(), 1u);
  auto m = read_json_file(dirs[0] + "/manifest.json");
  EXPECT_EQ(m["config"]["warn_percent"], 1.0);
  EXPECT_EQ(m["config"]["sample_ms"], 0);
  EXPECT_EQ(read_json_file(dirs[0] + "/summary.json")["alerts"]["warning"], 1);
  EXPECT_NE(r.err.find("alerts 1"), std::string::npos) << r.err;
}

// RangePush events in the only run directory under `root` (prog_nvtx's all come from NVTX).
int range_pushes(const std::string& root) {
  auto dirs = dirs_under(root);
  EXPECT_EQ(dirs.size(), 1u);
  if (dirs.size() != 1) return -1;
  reader::TraceReader trace;
  EXPECT_TRUE(trace.open(dirs[0] + "/trace.gmpt")) << trace.error();
  int n = 0;
  Event e;
  while (trace.next(e)) n += e.op == Op::RangePush;
  return n;
}

TEST(RunCommand, RecordsNvtxRangesAndChainsTheNvtxToolAlreadySet) {
  Sandbox box;
  // prog_nvtx pushes 9 ranges (the first, opened before any CUDA memory call, is replayed).
  RunResult r = box.run(run_args(box.dir() + "/plain", {Paths::bin("prog_nvtx")}),
                        tool_env({{"NVTX_INJECTION64_PATH", "<unset>"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["returns"][0], 0);  // the shim answered NVTX
  EXPECT_EQ(range_pushes(box.dir() + "/plain"), 9);

  // Another tool named in NVTX_INJECTION64_PATH keeps seeing every call.
  const std::string counts = box.dir() + "/fake_nvtx.json";
  r = box.run(run_args(box.dir() + "/chained", {Paths::bin("prog_nvtx")}),
              tool_env({{"NVTX_INJECTION64_PATH", Paths::bin("libfake_nvtx_tool.so")}, {"FAKE_NVTX_OUT", counts}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["returns"][0], 100);  // the chained tool's answer
  EXPECT_EQ(read_json_file(counts)["push_a"], 4);
  EXPECT_EQ(range_pushes(box.dir() + "/chained"), 9);

  // NVTX_INJECTION64_PATH already naming the shim is not chained to itself.
  r = box.run(run_args(box.dir() + "/self", {Paths::bin("prog_nvtx")}),
              tool_env({{"NVTX_INJECTION64_PATH", Paths::shim()}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["returns"][0], 0);
  EXPECT_EQ(range_pushes(box.dir() + "/self"), 9);
}

// The end-of-run summary counts events as the report does: a process that never flushed (its
// summary.json removed, as after SIGKILL) and one whose trace writes failed (what the collector
// then records in summary.json, written here) are said to be so.
TEST(RunCommand, IncompleteTracesAreSaidAtTheEnd) {
  Sandbox box;
  const std::string root = box.dir() + "/runs", script = box.dir() + "/two.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\n"
      << Paths::bin("prog_ops") << " alloc:1M >/dev/null\n"
      << "first=$(ls -d " << root << "/*)\nrm \"$first/summary.json\"\n"
      << Paths::bin("prog_ops") << " alloc:2M >/dev/null\n"
      << "for d in " << root << "/*; do [ \"$d\" = \"$first\" ] || sed -i "
      << "'s/\"unwritten\": 0/\"trace_error\": \"No space left on device\", \"unwritten\": 5/' \"$d/summary.json\"; done\n"
      << "echo \"$first\" > " << box.dir() + "/first.txt\n";
  }
  chmod(script.c_str(), 0755);
  RunResult r = box.run(run_args(root, {script}), tool_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string first;
  std::getline(std::ifstream(box.dir() + "/first.txt"), first);
  auto dirs = dirs_under(root);
  ASSERT_EQ(dirs.size(), 2u);
  const std::string second = dirs[0] == first ? dirs[1] : dirs[0];
  reader::TraceReader t1, t2;
  ASSERT_TRUE(t1.open(first + "/trace.gmpt"));
  ASSERT_TRUE(t2.open(second + "/trace.gmpt"));
  const std::string n1 = std::to_string(t1.records_in_file()), n2 = std::to_string(t2.records_in_file());
  const nlohmann::json s2 = read_json_file(second + "/summary.json");
  ASSERT_EQ(s2["events"]["unwritten"], 5);
  const std::string recorded = std::to_string(s2["events"]["recorded"].get<uint64_t>());
  EXPECT_NE(r.err.find("    events: " + n1 + " in trace.gmpt; lost and unwritten unknown (no final flush)\n"
                       "    note: the process ended without its final flush (no summary.json): events recorded after the "
                       "last trace write are missing and their number is unknown; figures are rebuilt from the " + n1 +
                       " events in trace.gmpt\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("    events: " + recorded + " recorded, 0 lost, 5 unwritten, " + n2 + " in trace.gmpt, 0 producer waits\n"
                       "    note: trace incomplete: 5 of " + recorded + " events were not written to trace.gmpt (No space "
                       "left on device)\n"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace gmp::test
