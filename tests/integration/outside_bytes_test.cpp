// Bytes that are not UTF-8, reaching the profiler from outside (environment, argv, working
// directory, executable path, GPUMEMPROF_* values): the program runs as without us, the run
// directory is complete, file and directory names keep the bytes, and every JSON file parses with
// each invalid byte written as U+FFFD (docs/run-directory.md).
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "harness.h"

namespace gmp::test {
namespace {

const std::string kLatin1 = "caf\xe9";          // "café" in ISO-8859-1: 0xe9 alone is not UTF-8
const std::string kReplaced = "caf\xef\xbf\xbd";  // how JSON files spell it: U+FFFD for the byte

nlohmann::json parsed(const std::string& path) {
  nlohmann::json j = read_json_file(path);
  EXPECT_FALSE(j.is_discarded()) << path << " is not valid JSON";
  return j;
}

// The run directory holds a parseable manifest.json and a clean-exit summary.json; returns the manifest.
nlohmann::json complete_run(const std::string& run) {
  EXPECT_TRUE(exists(run + "/trace.gmpt")) << run;
  EXPECT_EQ(parsed(run + "/summary.json")["clean_exit"], true);
  return parsed(run + "/manifest.json");
}

std::vector<std::string> entries(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  return out;
}

TEST(OutsideBytes, OomUnderANonUtf8EnvironmentValueKeepsTheProgramsStatus) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:256M", "expect_fail:2G", "exit:3"},
                        {{"FAKE_CUDA_CAPACITY", "1G"}, {"OLDPWD", "/home/u/" + kLatin1}});
  EXPECT_EQ(r.term_signal, 0) << r.err;
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const auto bundles = entries(box.only_run_dir() + "/oom", "oom_dump_");
  ASSERT_EQ(bundles.size(), 1u);
  auto env = parsed(bundles[0] + "/environment.json");
  EXPECT_EQ(env["environment"]["OLDPWD"], "/home/u/" + kReplaced);
  EXPECT_EQ(parsed(bundles[0] + "/metadata.json")["request"]["size"], 2ull << 30);
}

TEST(OutsideBytes, NonUtf8ArgumentIsPassedOnAndRecordedReplaced) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1M", "print:" + kLatin1});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kLatin1 + "\nok\n");
  EXPECT_EQ(r.err, "");
  auto m = complete_run(box.only_run_dir());
  EXPECT_EQ(m["argv"], nlohmann::json({Paths::bin("prog_ops"), "alloc:1M", "print:" + kReplaced}));
}

TEST(OutsideBytes, NonUtf8WorkingDirectory) {
  Sandbox box;
  const std::string cwd = box.dir() + "/" + kLatin1;
  ASSERT_EQ(mkdir(cwd.c_str(), 0700), 0);
  // The shell only changes directory and execs: it makes no GPU call, so it records nothing.
  RunResult r = box.run({"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd, Paths::bin("prog_ops"), "alloc:1M"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(complete_run(box.only_run_dir())["cwd"], box.dir() + "/" + kReplaced);
}

TEST(OutsideBytes, NonUtf8ExecutableNameNamesTheRunDirectoryWithItsBytes) {
  Sandbox box;
  const std::string exe = box.dir() + "/prog_" + kLatin1;
  {
    std::ifstream in(Paths::bin("prog_ops"), std::ios::binary);
    std::ofstream out(exe, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(chmod(exe.c_str(), 0755), 0);
  RunResult r = box.run({exe, "alloc:1M"}, {{"GPUMEMPROF_OUTPUT", box.dir() + "/run.%e.%p"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = box.only_run_dir();
  auto m = complete_run(run);
  EXPECT_EQ(m["exe"], box.dir() + "/prog_" + kReplaced);
  EXPECT_EQ(run, box.dir() + "/run.prog_" + kLatin1 + "." + std::to_string(m["pid"].get<int>()));
}

TEST(OutsideBytes, NonUtf8OutputTemplate) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1M"}, {{"GPUMEMPROF_OUTPUT", box.dir() + "/run." + kLatin1 + ".%p"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string run = box.only_run_dir();
  auto m = complete_run(run);
  EXPECT_EQ(run, box.dir() + "/run." + kLatin1 + "." + std::to_string(m["pid"].get<int>()));
  EXPECT_EQ(m["config"]["output"], box.dir() + "/run." + kReplaced + ".%p");
}

TEST(OutsideBytes, NonUtf8OomDirectory) {
  Sandbox box;
  const std::string oom_dir = box.dir() + "/oom." + kLatin1;
  RunResult r = box.run({Paths::bin("prog_ops"), "expect_fail:2G"}, {{"FAKE_CUDA_CAPACITY", "1G"}, {"GPUMEMPROF_OOM_DIR", oom_dir}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = complete_run(box.only_run_dir());
  EXPECT_EQ(m["config"]["oom_dir"], box.dir() + "/oom." + kReplaced);
  const auto bundles = entries(oom_dir, "oom_dump_");
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(parsed(bundles[0] + "/manifest.json")["files"].size(), 5u);
}

TEST(OutsideBytes, NonUtf8AlertCommandGetsParseableJson) {
  Sandbox box;
  const std::string script = box.dir() + "/alert." + kLatin1 + ".sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\ncat > \"$1/stdin.json.tmp\"\nmv \"$1/stdin.json.tmp\" \"$1/stdin.json\"\n";
  }
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  // The run directory's name has the bytes too, so the alert JSON (its run_dir) carries them.
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:850M", "free_all"},
                        {{"FAKE_CUDA_CAPACITY", "1G"}, {"GPUMEMPROF_SAMPLE_MS", "1000"},
                         {"GPUMEMPROF_OUTPUT", box.dir() + "/run." + kLatin1 + ".%p"},
                         {"GPUMEMPROF_ON_ALERT", script + " " + box.dir()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = box.only_run_dir();
  auto m = complete_run(run);
  EXPECT_EQ(m["config"]["on_alert"], box.dir() + "/alert." + kReplaced + ".sh " + box.dir());
  // The command runs detached; give it a moment.
  for (int i = 0; i < 500 && !exists(box.dir() + "/stdin.json"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto alert = parsed(box.dir() + "/stdin.json");
  EXPECT_EQ(alert["type"], "warning");
  EXPECT_EQ(alert["run_dir"], box.dir() + "/run." + kReplaced + "." + std::to_string(m["pid"].get<int>()));
}

}  // namespace
}  // namespace gmp::test
