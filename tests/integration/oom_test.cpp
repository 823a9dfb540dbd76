// The OOM flight recorder on the fake driver (1 GiB devices): bundle contents against the forced
// state, the bundle being on disk before the failing call returns, the de-duplication rule,
// retention, redaction and the refusal to follow symlinks.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;
const std::map<std::string, std::string> kSmallDevice = {{"FAKE_CUDA_CAPACITY", "1G"}};

std::map<std::string, std::string> with(std::map<std::string, std::string> extra) {
  extra.insert(kSmallDevice.begin(), kSmallDevice.end());
  return extra;
}

std::vector<std::string> bundles_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind("oom_dump_", 0) == 0) out.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_mode & 0777 : 0;
}

RunResult ops(const Sandbox& box, std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), Paths::bin("prog_ops"));
  return box.run(args, with(env));
}

TEST(Oom, BundleHoldsTheExactStateAtTheFailure) {
  Sandbox box;
  RunResult r = ops(box, {"alloc:256M", "alloc:128M", "alloc:64M", "free:1", "expect_fail:2G"}, {{"MY_API_TOKEN", "hunter2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("gpumemprof: CUDA_ERROR_OUT_OF_MEMORY: cuMemAlloc_v2 of 2.00 GiB (2147483648 bytes) on device 0; "
                       "OOM bundle written to "),
            0u)
      << r.err;
  const std::string run = box.only_run_dir();
  auto bundles = bundles_in(run + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  const std::string b = bundles[0];
  EXPECT_NE(b.find("_cuda_1"), std::string::npos);
  EXPECT_EQ(mode_of(b), 0700u);

  auto manifest = read_json_file(b + "/manifest.json");
  EXPECT_EQ(manifest["schema_version"], 1);
  EXPECT_EQ(manifest["backend"], "cuda");
  EXPECT_EQ(manifest["bundle_name"], b.substr(b.rfind('/') + 1));
  for (const auto& f : manifest["files"]) {
    EXPECT_TRUE(exists(b + "/" + f.get<std::string>())) << f;
    EXPECT_EQ(mode_of(b + "/" + f.get<std::string>()), 0600u) << f;
  }
  EXPECT_EQ(manifest["files"].size(), 5u);

  auto m = read_json_file(b + "/metadata.json");
  EXPECT_EQ(m["request"]["api"], "cuMemAlloc_v2");
  EXPECT_EQ(m["request"]["size"], 2ull << 30);
  EXPECT_EQ(m["request"]["device"], 0);
  EXPECT_EQ(m["request"]["error"], 2);
  EXPECT_EQ(m["request"]["error_name"], "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(m["devices"][0]["allocated_bytes"]["current"], 320 * MiB);
  EXPECT_EQ(m["devices"][0]["allocated_bytes"]["peak"], 448 * MiB);
  EXPECT_EQ(m["devices"][0]["total_bytes"], 1ull << 30);
  EXPECT_EQ(m["driver_memory"]["total"], 1ull << 30);
  EXPECT_EQ(m["driver_memory"]["free"], (1ull << 30) - 320 * MiB);
  EXPECT_EQ(m["live_count"], 2);
  EXPECT_EQ(m["live_bytes"], 320 * MiB);
  ASSERT_EQ(m["largest_live"].size(), 2u);
  EXPECT_EQ(m["largest_live"][0]["size"], 256 * MiB);
  EXPECT_EQ(m["largest_live"][1]["size"], 64 * MiB);
  EXPECT_EQ(m["recovered"], false);
  EXPECT_EQ(m["failures"], 1);

  auto allocations = read_json_file(b + "/allocations.json");
  ASSERT_EQ(allocations.size(), 2u);
  uint64_t bytes = 0;
  for (const auto& a : allocations) bytes += a["size"].get<uint64_t>();
  EXPECT_EQ(bytes, 320 * MiB);

  auto events = read_json_file(b + "/events.json");
  ASSERT_GE(events.size(), 6u);
  EXPECT_EQ(events.back()["op"], "alloc");
  EXPECT_EQ(events.back()["result"], 2);
  EXPECT_EQ(events[events.size() - 2]["op"], "driver_memory");

  auto env = read_json_file(b + "/environment.json");
  EXPECT_EQ(env["pid"], manifest["pid"]);
  EXPECT_EQ(env["environment"]["MY_API_TOKEN"], "<redacted>");
  EXPECT_EQ(env["environment"]["FAKE_CUDA_CAPACITY"], "1G");
  EXPECT_EQ(env["cuda_driver_version"], 13000);

  auto s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["oom"], nlohmann::json({{"failures", 1}, {"bundles_written", 1}, {"recovered", 0}}));
}

TEST(Oom, BundleIsOnDiskBeforeTheFailingCallReturns) {
  Sandbox box;
  int out = -1;
  pid_t pid = box.spawn({Paths::bin("prog_ops"), "alloc:256M", "expect_fail:2G", "print:after", "sleep:30000"},
                        kSmallDevice, &out);
  ASSERT_EQ(read_line(out, 30000), "after");
  kill(pid, SIGKILL);  // no exit path runs: only what the failing call waited for is there
  wait_for(pid, out, -1, 30);
  close(out);
  auto bundles = bundles_in(box.only_run_dir() + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(read_json_file(bundles[0] + "/metadata.json")["request"]["size"], 2ull << 30);
  EXPECT_EQ(read_json_file(bundles[0] + "/allocations.json").size(), 1u);
}

TEST(Oom, AbortRightAfterTheFailureStillLeavesTheBundle) {
  Sandbox box;
  RunResult r = ops(box, {"alloc:256M", "expect_fail:2G", "abort"});
  EXPECT_EQ(r.term_signal, SIGABRT);
  auto bundles = bundles_in(box.only_run_dir() + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(read_json_file(bundles[0] + "/manifest.json")["files"].size(), 5u);
}

TEST(Oom, RetryThenSuccessIsRecovered) {
  Sandbox box;
  RunResult r = ops(box, {"alloc:512M", "expect_fail:768M", "free:0", "retry_ok:768M"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto bundles = bundles_in(box.only_run_dir() + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  auto m = read_json_file(bundles[0] + "/metadata.json");
  EXPECT_EQ(m["recovered"], true);
  EXPECT_EQ(m["failures"], 1);
  EXPECT_EQ(m["recovered_by"]["size"], 768 * MiB);
  auto s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_EQ(s["oom"], nlohmann::json({{"failures", 1}, {"bundles_written", 1}, {"recovered", 1}}));
}

TEST(Oom, AFailedRetryIsTheSameEpisodeAndTheSameBundle) {
  Sandbox box;
  RunResult r = ops(box, {"alloc:512M", "expect_fail:768M", "expect_fail:768M"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto bundles = bundles_in(box.only_run_dir() + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  auto m = read_json_file(bundles[0] + "/metadata.json");
  EXPECT_EQ(m["failures"], 2);
  EXPECT_EQ(m["recovered"], false);
  auto s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_EQ(s["oom"], nlohmann::json({{"failures", 2}, {"bundles_written", 1}, {"recovered", 0}}));
}

// Three episodes (each recovered before the next failure) with room for two bundles.
TEST(Oom, RetentionKeepsTheNewestBundles) {
  Sandbox box;
  std::vector<std::string> args;
  for (int i = 0; i < 3; ++i) {
    const std::string base = std::to_string(2 * i);
    for (const std::string& op : std::vector<std::string>{"alloc:768M", "expect_fail:512M", "free:" + base,
                                                           "retry_ok:512M", "free:" + std::to_string(2 * i + 1)}) {
      args.push_back(op);
    }
  }
  RunResult r = ops(box, args, {{"GPUMEMPROF_OOM_MAX_DUMPS", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto bundles = bundles_in(box.only_run_dir() + "/oom");
  ASSERT_EQ(bundles.size(), 2u);
  EXPECT_NE(bundles[0].find("_cuda_2"), std::string::npos);
  EXPECT_NE(bundles[1].find("_cuda_3"), std::string::npos);
  auto s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_EQ(s["oom"], nlohmann::json({{"failures", 3}, {"bundles_written", 3}, {"recovered", 3}}));
}

TEST(Oom, RetentionBySizeNeverRemovesTheNewest) {
  Sandbox box;
  // About 4,000 events of history make each bundle larger than the 1 MB allowed in total.
  std::vector<std::string> args;
  for (int i = 0; i < 2000; ++i) {
    args.push_back("alloc:1K");
    args.push_back("free_last");
  }
  for (const std::string op : {"alloc:768M", "expect_fail:512M", "free_last", "retry_ok:512M", "free_last",
                               "alloc:768M", "expect_fail:512M"}) {
    args.push_back(op);
  }
  RunResult r = ops(box, args, {{"GPUMEMPROF_OOM_MAX_TOTAL_MB", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto bundles = bundles_in(box.only_run_dir() + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_NE(bundles[0].find("_cuda_2"), std::string::npos);
  EXPECT_GT(read_json_file(bundles[0] + "/events.json").size(), 4000u);  // the whole history fits
}

TEST(Oom, HistoryLengthFollowsTheSetting) {
  Sandbox box;
  RunResult r = ops(box, {"alloc:1M", "free_last", "alloc:1M", "expect_fail:2G"}, {{"GPUMEMPROF_OOM_EVENTS", "3"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto bundles = bundles_in(box.only_run_dir() + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  auto events = read_json_file(bundles[0] + "/events.json");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["op"], "alloc");  // the second 1 MiB allocation
  EXPECT_EQ(events[1]["op"], "driver_memory");
  EXPECT_EQ(events[2]["result"], 2);
}

TEST(Oom, ASymlinkedOomDirectoryIsNeverFollowed) {
  Sandbox box;
  const std::string target = box.dir() + "/elsewhere";
  mkdir(target.c_str(), 0700);
  const std::string link = box.dir() + "/oom-link";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  RunResult r = ops(box, {"alloc:256M", "expect_fail:2G"}, {{"GPUMEMPROF_OOM_DIR", link}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("is a symlink; not following it"), std::string::npos) << r.err;
  EXPECT_TRUE(bundles_in(target).empty());
  auto s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_EQ(s["oom"]["failures"], 1);
  EXPECT_EQ(s["oom"]["bundles_written"], 0);
}

// Issue 28: the run directory moved away while the program runs (by its user): the OOM bundle goes
// to the directory where it is now, and nothing is made again at the old path. Before, the path was
// walked again and the run directory re-created there for the bundle and the summary.
TEST(Oom, AMovedRunDirectoryGetsItsBundleAndIsNeverMadeAgain) {
  Sandbox box;
  const std::string go = box.dir() + "/go", moved = box.dir() + "/moved";
  int out = -1;
  const pid_t pid = box.spawn({Paths::bin("prog_ops"), "alloc:256M", "print:ready", "wait:" + go, "expect_fail:2G"},
                              with({}), &out);
  ASSERT_EQ(read_line(out, 30000), "ready");
  const std::string run = box.only_run_dir();
  ASSERT_EQ(rename(run.c_str(), moved.c_str()), 0);
  std::ofstream(go) << "";
  RunResult r = wait_for(pid, out, -1, 60);
  close(out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(exists(run));
  ASSERT_EQ(bundles_in(moved + "/oom").size(), 1u);
  EXPECT_EQ(read_json_file(bundles_in(moved + "/oom")[0] + "/metadata.json")["request"]["size"], 2048 * MiB);
  const auto s = read_json_file(moved + "/summary.json");
  EXPECT_EQ(s["oom"]["bundles_written"], 1);
  EXPECT_EQ(s["ended_by"], "exit");
}

}  // namespace
}  // namespace gmp::test
