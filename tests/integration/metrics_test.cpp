// Fleet metrics (docs/metrics.md): the Prometheus textfile a profiled process keeps under
// GPUMEMPROF_METRICS_DIR, on the fake driver, and the same file read by the real node_exporter and
// checked by promtool.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "harness.h"

namespace gmp::test {
namespace {

using namespace std::chrono_literals;

// A rank of a torchrun job inside a Slurm allocation: rank 3, job id 4711 (launcher_env.h).
const std::map<std::string, std::string> kJob = {{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"},
                                                 {"SLURM_JOB_ID", "4711"}, {"FAKE_CUDA_CAPACITY", "1G"},
                                                 {"GPUMEMPROF_SAMPLE_MS", "0"}};

std::map<std::string, std::string> with(std::map<std::string, std::string> env,
                                        const std::map<std::string, std::string>& more) {
  for (const auto& [k, v] : more) env[k] = v;
  return env;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The names in `dir`, sorted; none when it does not exist.
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The PID namespace of the programs we start: ours (the inode of /proc/self/ns/pid).
std::string pid_namespace() {
  struct stat st {};
  EXPECT_EQ(stat("/proc/self/ns/pid", &st), 0);
  return std::to_string(st.st_ino);
}

// The labels of the run's process, as the file writes them.
std::string process_labels(const std::string& run_dir) {
  const auto m = read_json_file(run_dir + "/manifest.json");
  return "rank=\"3\",job_id=\"4711\",host=\"" + m["host"].get<std::string>() + "\",pid=\"" +
         std::to_string(m["pid"].get<int>()) + "\",pid_namespace=\"" + pid_namespace() + "\",executable=\"prog_ops\"";
}

std::string file_name(const std::string& run_dir) {
  const auto m = read_json_file(run_dir + "/manifest.json");
  return "gpumemprof_" + m["host"].get<std::string>() + "_" + std::to_string(m["pid"].get<int>()) + "_" +
         pid_namespace() + ".prom";
}

// The file with its last-update value replaced by T (checked separately: it is the clock).
std::string without_clock(const std::string& text, double* seconds = nullptr) {
  static const std::regex clock(R"((gpumemprof_last_update_seconds\{[^\n]*\} )([0-9]+\.[0-9]{3})\n)");
  std::smatch m;
  if (!std::regex_search(text, m, clock)) return text;
  if (seconds != nullptr) *seconds = std::stod(m[2].str());
  return m.prefix().str() + m[1].str() + "T\n" + m.suffix().str();
}

std::string expected_file(const std::string& L, int exited, uint64_t allocated, uint64_t peak, uint64_t live,
                          uint64_t failed, uint64_t bundles) {
  const std::string d0 = "{device=\"0\"," + L + "} ";
  const std::string a = std::to_string(allocated), p = std::to_string(peak);
  return "# HELP gpumemprof_exited 1 once the profiled process has ended: the figures are its last ones.\n"
         "# TYPE gpumemprof_exited gauge\n"
         "gpumemprof_exited{" + L + "} " + std::to_string(exited) + "\n"
         "# HELP gpumemprof_last_update_seconds When gpumemprof last rewrote this file, in Unix time.\n"
         "# TYPE gpumemprof_last_update_seconds gauge\n"
         "gpumemprof_last_update_seconds{" + L + "} T\n"
         "# HELP gpumemprof_device_total_bytes Total memory of the device, as the driver reports it.\n"
         "# TYPE gpumemprof_device_total_bytes gauge\n"
         "gpumemprof_device_total_bytes" + d0 + "1073741824\n"
         "# HELP gpumemprof_allocated_bytes Device memory held by the process's allocations (linear, pool, VMM "
         "mapped, arrays).\n"
         "# TYPE gpumemprof_allocated_bytes gauge\n"
         "gpumemprof_allocated_bytes" + d0 + a + "\n"
         "# HELP gpumemprof_allocated_peak_bytes Highest allocated bytes since the process started, over every "
         "event.\n"
         "# TYPE gpumemprof_allocated_peak_bytes gauge\n"
         "gpumemprof_allocated_peak_bytes" + d0 + p + "\n"
         "# HELP gpumemprof_reserved_bytes Device memory the process holds from the driver, pools' reserve "
         "included.\n"
         "# TYPE gpumemprof_reserved_bytes gauge\n"
         "gpumemprof_reserved_bytes" + d0 + a + "\n"
         "# HELP gpumemprof_reserved_peak_bytes Highest reserved bytes since the process started, over every "
         "event.\n"
         "# TYPE gpumemprof_reserved_peak_bytes gauge\n"
         "gpumemprof_reserved_peak_bytes" + d0 + p + "\n"
         "# HELP gpumemprof_live_allocations Allocations holding memory now; with the PyTorch bridge, its tensors "
         "rather than its cached segments.\n"
         "# TYPE gpumemprof_live_allocations gauge\n"
         "gpumemprof_live_allocations" + d0 + std::to_string(live) + "\n"
         "# HELP gpumemprof_failed_allocations_total Allocation calls that failed (out of memory or another "
         "error).\n"
         "# TYPE gpumemprof_failed_allocations_total counter\n"
         "gpumemprof_failed_allocations_total" + d0 + std::to_string(failed) + "\n"
         "# HELP gpumemprof_oom_bundles_total OOM bundles written for an allocation on the device.\n"
         "# TYPE gpumemprof_oom_bundles_total counter\n"
         "gpumemprof_oom_bundles_total" + d0 + std::to_string(bundles) + "\n"
         "# HELP gpumemprof_alerts_total Alerts fired for the device, by type.\n"
         "# TYPE gpumemprof_alerts_total counter\n"
         "gpumemprof_alerts_total{device=\"0\"," + L + ",type=\"warning\"} 0\n"
         "gpumemprof_alerts_total{device=\"0\"," + L + ",type=\"critical\"} 0\n"
         "gpumemprof_alerts_total{device=\"0\"," + L + ",type=\"fragmentation\"} 0\n"
         "gpumemprof_alerts_total{device=\"0\"," + L + ",type=\"growth\"} 0\n";
}

constexpr uint64_t MiB = 1 << 20;

// 100 MiB, 30 MiB freed again, 10 MiB, and a 2 GiB request the 1 GiB device refuses (one OOM bundle).
const std::vector<std::string> kSequence = {"alloc:100M", "alloc:30M", "free_last", "alloc:10M", "expect_fail:2G"};

// The process that wrote `prom_dir`/<its file> and left `run_dir`: one file, and nothing else.
std::string only_file(const std::string& prom_dir, const std::string& run_dir) {
  EXPECT_EQ(entries(prom_dir), std::vector<std::string>{file_name(run_dir)});
  return prom_dir + "/" + file_name(run_dir);
}

TEST(Metrics, ExactFiguresAfterAKnownSequenceAndMarkedExitedAtTheEnd) {
  Sandbox box;
  const std::string prom = box.dir() + "/prom";  // created by the process
  const auto before = std::chrono::system_clock::now();
  std::vector<std::string> argv{Paths::bin("prog_ops")};
  argv.insert(argv.end(), kSequence.begin(), kSequence.end());
  RunResult r = box.run(argv, with(kJob, {{"GPUMEMPROF_METRICS_DIR", prom}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = box.only_run_dir();
  EXPECT_EQ(r.err.rfind("gpumemprof: CUDA_ERROR_OUT_OF_MEMORY: cuMemAlloc_v2 of 2.00 GiB (2147483648 bytes) on "
                        "device 0; OOM bundle written to " + run + "/oom/", 0), 0u) << r.err;  // and nothing else
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const std::string path = only_file(prom, run);
  double seconds = 0;
  EXPECT_EQ(without_clock(slurp(path), &seconds),
            expected_file(process_labels(run), 1, 110 * MiB, 130 * MiB, 2, 1, 1));
  const double t0 = std::chrono::duration<double>(before.time_since_epoch()).count();
  const double t1 = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GE(seconds, t0 - 0.001);
  EXPECT_LE(seconds, t1);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0004, 0004u);  // node_exporter, another user, reads it
  // The run's own figures are those of the file.
  const auto s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["devices"][0]["allocated_bytes"]["peak"], 130 * MiB) << s.dump();
}

// Polls `path` for up to 5 s (fifty intervals of 100 ms: slack for a loaded machine) until it holds
// `expected` (clock aside); returns the time it says.
double wait_for_text(const std::string& path, const std::string& expected) {
  std::string text;
  double seconds = 0;
  for (int i = 0; i < 500 && (text = without_clock(slurp(path), &seconds)) != expected; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(text, expected);
  return seconds;
}

// prog_ops running `ops` with a 100 ms metrics interval, once it has printed "one" (by then it
// profiles: its run directory is there).
struct Running {
  pid_t pid = -1;
  int out = -1;
  std::string run;
};

Running start_ops(const Sandbox& box, const std::string& prom, std::vector<std::string> ops) {
  Running p;
  ops.insert(ops.begin(), Paths::bin("prog_ops"));
  p.pid = box.spawn(ops, with(kJob, {{"GPUMEMPROF_METRICS_DIR", prom}, {"GPUMEMPROF_METRICS_INTERVAL_MS", "100"}}),
                    &p.out);
  EXPECT_EQ(read_line(p.out, 30000), "one");
  p.run = box.only_run_dir();
  return p;
}

TEST(Metrics, RewrittenEveryIntervalWhileTheProcessRuns) {
  Sandbox box;
  const std::string prom = box.dir() + "/prom";
  auto [pid, out, run] = start_ops(box, prom, {"alloc:1M", "print:one", "sleep:1500", "alloc:2M", "print:three",
                                               "sleep:1500"});
  const std::string L = process_labels(run), path = prom + "/" + file_name(run);
  const double first = wait_for_text(path, expected_file(L, 0, 1 * MiB, 1 * MiB, 1, 0, 0));
  ASSERT_EQ(read_line(out, 30000), "three");
  const double second = wait_for_text(path, expected_file(L, 0, 3 * MiB, 3 * MiB, 2, 0, 0));
  EXPECT_GE(second - first, 1.0);  // rewritten with the time of each write, 1.5 s of sleep apart
  RunResult r = wait_for(pid, out, -1, 60);
  close(out);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(without_clock(slurp(only_file(prom, run))), expected_file(L, 1, 3 * MiB, 3 * MiB, 2, 0, 0));
}

TEST(Metrics, AProcessKilledOutrightLeavesItsLastFiguresUnmarked) {
  Sandbox box;
  const std::string prom = box.dir() + "/prom";
  auto [pid, out, run] = start_ops(box, prom, {"alloc:1M", "print:one", "sleep:30000"});
  const std::string expected = expected_file(process_labels(run), 0, MiB, MiB, 1, 0, 0);
  wait_for_text(prom + "/" + file_name(run), expected);
  kill(pid, SIGKILL);
  wait_for(pid, out, -1, 30);
  close(out);
  // gpumemprof_exited 0 and a last update that no longer moves: the documented sign of a process
  // that could not say it ended (docs/metrics.md, the stale-file alert).
  EXPECT_EQ(without_clock(slurp(only_file(prom, run))), expected);
}

TEST(Metrics, NothingIsWrittenByAProcessThatNeverUsesCuda) {
  Sandbox box;
  const std::string prom = box.dir() + "/prom";
  RunResult r = box.run({"/bin/sh", "-c", "exit 0"}, {{"GPUMEMPROF_METRICS_DIR", prom}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  struct stat st {};
  EXPECT_NE(stat(prom.c_str(), &st), 0) << "the metrics directory was created";
}

TEST(Metrics, AFailedWriteIsSaidOnceAndTheProgramCarriesOn) {
  Sandbox box;
  const std::string prom = box.dir() + "/prom", gone = box.dir() + "/gone";
  auto [pid, out, run] = start_ops(box, prom, {"alloc:1M", "print:one", "sleep:1200", "alloc:1M"});
  const std::string expected = expected_file(process_labels(run), 0, MiB, MiB, 1, 0, 0);
  wait_for_text(prom + "/" + file_name(run), expected);
  // The directory goes away: renamed first (the writer keeps writing into it there: it holds the
  // directory, not its path), then removed, again until no write of ours slipped in between. Ten
  // intervals of failed writes follow, the final one included, and it is never made again.
  ASSERT_EQ(rename(prom.c_str(), gone.c_str()), 0);
  for (int i = 0; i < 100 && exists(gone); ++i) std::system(("rm -rf " + gone + " 2>/dev/null").c_str());
  ASSERT_FALSE(exists(gone));
  RunResult r = wait_for(pid, out, -1, 60);
  close(out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(slurp(box.dir() + "/.stderr"), "gpumemprof: cannot write the metrics file " + prom + "/" +
                                               file_name(run) + ": No such file or directory; trying again every "
                                               "interval\n");
  EXPECT_EQ(read_json_file(run + "/summary.json")["devices"][0]["allocated_bytes"]["peak"], 2 * MiB);
  EXPECT_FALSE(exists(prom) || exists(gone));
}

TEST(Metrics, AnUnusableDirectoryIsSaidOnceAndProfilingCarriesOn) {
  Sandbox box;
  const std::string prom = box.dir() + "/not-a-directory";
  std::ofstream(prom) << "x";
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1M"}, with(kJob, {{"GPUMEMPROF_METRICS_DIR", prom}}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "gpumemprof: cannot use the metrics directory " + prom + ": '" + prom +
                       "' is not a directory; no metrics for this process\n");
  EXPECT_EQ(read_json_file(box.only_run_dir() + "/summary.json")["devices"][0]["allocated_bytes"]["peak"], MiB);
}

TEST(Metrics, AnIntervalOutOfRangeIsSaidAndTheDefaultUsed) {
  Sandbox box;
  const std::string prom = box.dir() + "/prom";
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1M"},
                        with(kJob, {{"GPUMEMPROF_METRICS_DIR", prom}, {"GPUMEMPROF_METRICS_INTERVAL_MS", "50"}}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "gpumemprof: invalid GPUMEMPROF_METRICS_INTERVAL_MS='50': expected an integer from 100 "
                   "to 3600000; using the default 5000\n");
  const std::string run = box.only_run_dir();
  EXPECT_EQ(read_json_file(run + "/manifest.json")["config"]["metrics_interval_ms"], 5000);
  EXPECT_EQ(without_clock(slurp(only_file(prom, run))), expected_file(process_labels(run), 1, MiB, MiB, 1, 0, 0));
}

TEST(Metrics, RunMetricsDirOption) {
  Sandbox box;
  const std::string root = box.dir() + "/runs", prom = box.dir() + "/prom";
  RunResult help = run_tool({"run", "--help"});
  EXPECT_NE(flat(help.out).find(" --metrics-dir DIR each process keeps its figures in DIR as a Prometheus textfile "
                                "(node_exporter's textfile collector; docs/metrics.md) "),
            std::string::npos) << help.out;
  std::vector<std::string> argv{Paths::tool(), "run", "-o", root, "--metrics-dir", prom, "--", Paths::bin("prog_ops")};
  argv.insert(argv.end(), kSequence.begin(), kSequence.end());
  RunResult r = box.run(argv, with(kJob, {{"LD_PRELOAD", "<unset>"}, {"GPUMEMPROF_OUTPUT", "<unset>"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto runs = entries(root);
  ASSERT_EQ(runs.size(), 1u);
  const std::string run = root + "/" + runs[0];
  EXPECT_EQ(read_json_file(run + "/manifest.json")["config"]["metrics_dir"], prom);
  EXPECT_EQ(without_clock(slurp(only_file(prom, run))),
            expected_file(process_labels(run), 1, 110 * MiB, 130 * MiB, 2, 1, 1));
}

// ---- Another user's files in a shared metrics directory (issue 28) ----

// A metrics directory everyone may write into (mode 1777, root's), as a node_exporter's textfile
// directory shared by several users' jobs; the sandbox opened for the other user to reach it.
std::string shared_prom(const Sandbox& box) {
  const std::string prom = box.dir() + "/prom";
  EXPECT_EQ(chmod(box.dir().c_str(), 0755), 0);
  EXPECT_EQ(mkdir(prom.c_str(), 0700), 0);
  EXPECT_EQ(chmod(prom.c_str(), 01777), 0);
  return prom;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

uid_t owner_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_uid;
}

// prog_ops waiting before its first allocation (nothing of it written yet), while the other user
// plants `plant(prom, name)` under the names its process would have used, then finishing:
// ops `print:ready wait:go alloc:1M`. Returns the run's result.
RunResult run_with_planted(const Sandbox& box, const std::string& prom,
                           const std::function<int(const std::string&)>& plant) {
  const std::string go = box.dir() + "/go";
  int out = -1;
  const pid_t pid = box.spawn({Paths::bin("prog_ops"), "print:ready", "wait:" + go, "alloc:1M"},
                              with(kJob, {{"GPUMEMPROF_METRICS_DIR", prom}}), &out);
  EXPECT_EQ(read_line(out, 30000), "ready");
  // The temporary name the file had (gpumemprof_<host>_<pid>.prom.tmp), and the file's own.
  const std::string before = prom + "/gpumemprof_" + host_name() + "_" + std::to_string(pid);
  EXPECT_EQ(as_other_user([&] { return plant(before); }), 0);
  std::ofstream(go) << "";
  RunResult r = wait_for(pid, out, -1, 20);
  close(out);
  return r;
}

// A FIFO under the name of the file's temporary: before, the collector blocked in open() on it, and
// so did the program at exit, forever. Now our temporaries have names nobody can guess, are made
// exclusively, and nothing we open can block us.
TEST(Metrics, AFifoPlantedByAnotherUserNeverStopsTheProgram) {
  SKIP_UNLESS_ROOT();
  Sandbox box;
  const std::string prom = shared_prom(box);
  const RunResult r = run_with_planted(box, prom, [](const std::string& before) {
    return mkfifo((before + ".prom.tmp").c_str(), 0666) == 0 ? 0 : 1;
  });
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.out, "ok\n");
  const std::string run = box.only_run_dir();
  const std::string ours = prom + "/" + file_name(run);
  EXPECT_EQ(without_clock(slurp(ours)), expected_file(process_labels(run), 1, MiB, MiB, 1, 0, 0));
  EXPECT_EQ(owner_of(ours), 0u);
  struct stat st {};
  ASSERT_EQ(lstat((prom + "/" + file_name(run).substr(0, file_name(run).rfind('_')) + ".prom.tmp").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));  // theirs, untouched
}

// A file of theirs under that name: before, we truncated it, wrote our figures into it and renamed
// it into place, so the .prom was theirs to change. Now it is left alone and ours is ours.
TEST(Metrics, AFilePlantedByAnotherUserIsNeitherWrittenNorTaken) {
  SKIP_UNLESS_ROOT();
  Sandbox box;
  const std::string prom = shared_prom(box);
  const RunResult r = run_with_planted(box, prom, [](const std::string& before) {
    std::ofstream planted(before + ".prom.tmp");
    return planted << "theirs" ? 0 : 1;
  });
  EXPECT_EQ(r.exit_code, 0);
  const std::string run = box.only_run_dir();
  const std::string ours = prom + "/" + file_name(run);
  EXPECT_EQ(owner_of(ours), 0u);
  EXPECT_EQ(without_clock(slurp(ours)), expected_file(process_labels(run), 1, MiB, MiB, 1, 0, 0));
  const std::string planted = prom + "/" + file_name(run).substr(0, file_name(run).rfind('_')) + ".prom.tmp";
  EXPECT_EQ(slurp(planted), "theirs");
  EXPECT_EQ(owner_of(planted), other_user().uid);
}

// Two containers with one host name: each process is pid 1 of its own PID namespace. Before, both
// wrote gpumemprof_<host>_1.prom, the second over the first; the namespace now tells them apart.
TEST(Metrics, OnePidInTwoPidNamespacesKeepsTwoFiles) {
  SKIP_UNLESS_ROOT();
  Sandbox box;
  const std::string prom = box.dir() + "/prom";
  // Both at once: a namespace's inode number is reused once it is gone, so one after the other
  // could get the same number (and did, under load).
  const std::string one = "/usr/bin/unshare --pid --fork " + Paths::bin("prog_ops") + " alloc:";
  RunResult r = box.run({"/bin/sh", "-c", one + "1M sleep:300 & " + one + "2M sleep:300 & wait"},
                        with(kJob, {{"GPUMEMPROF_METRICS_DIR", prom}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> files = entries(prom);
  ASSERT_EQ(files.size(), 2u);
  const std::regex name("gpumemprof_" + host_name() + "_1_([0-9]+)\\.prom");
  std::set<std::string> namespaces;
  std::set<uint64_t> peaks;
  for (const std::string& f : files) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(f, m, name)) << f;
    namespaces.insert(m[1].str());
    const std::string text = slurp(prom + "/" + f);
    EXPECT_NE(text.find(",pid=\"1\",pid_namespace=\"" + m[1].str() + "\","), std::string::npos) << text;
    static const std::regex peak(R"(gpumemprof_allocated_peak_bytes\{[^}]*\} ([0-9]+)\n)");
    std::smatch p;
    ASSERT_TRUE(std::regex_search(text, p, peak)) << text;
    peaks.insert(std::stoull(p[1].str()));
  }
  EXPECT_EQ(namespaces.size(), 2u);
  EXPECT_EQ(peaks, (std::set<uint64_t>{MiB, 2 * MiB}));
}

// ---- The real thing: Debian's prometheus-node-exporter and promtool ----

constexpr const char* kExporter = "/usr/bin/prometheus-node-exporter";
constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr const char* kCurl = "/usr/bin/curl";

// A command's stdout and stderr together, and its exit status; `timeout` bounds it.
std::pair<int, std::string> shell(const std::string& command) {
  std::string out;
  FILE* p = popen(("timeout 20 " + command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, out};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A port nobody listens on now, on loopback.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// The exporter, killed (and reaped) however the test ends.
struct Exporter {
  pid_t pid = -1;
  int out = -1;
  ~Exporter() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (out >= 0) close(out);
  }
};

// Samples of the exposition text, `name{labels}` with labels sorted by name -> value. Label values
// here hold no comma, quote or brace (the escaping is unit-tested).
std::map<std::string, double> samples(const std::string& text, const std::string& prefix) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t open = line.find('{'), close = line.rfind('}');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::vector<std::string> labels;
    std::istringstream ls(line.substr(open + 1, close - open - 1));
    for (std::string l; std::getline(ls, l, ',');) labels.push_back(l);
    std::sort(labels.begin(), labels.end());
    std::string key = line.substr(0, open) + "{";
    for (const auto& l : labels) key += l + ",";
    out[key + "}"] = std::strtod(line.c_str() + close + 1, nullptr);
  }
  return out;
}

TEST(MetricsNodeExporter, ServesOurGaugesAndPromtoolAcceptsTheFile) {
  for (const char* bin : {kExporter, kPromtool, kCurl}) {
    if (access(bin, X_OK) != 0) GTEST_SKIP() << bin << " is not installed (scripts/setup.sh installs it)";
  }
  Sandbox box;
  const std::string prom = box.dir() + "/prom";
  std::vector<std::string> argv{Paths::bin("prog_ops")};
  argv.insert(argv.end(), kSequence.begin(), kSequence.end());
  RunResult r = box.run(argv, with(kJob, {{"GPUMEMPROF_METRICS_DIR", prom}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string file = only_file(prom, box.only_run_dir());

  // promtool's linter: nothing to say, exit 0.
  const auto [check_status, check_out] = shell(std::string(kPromtool) + " check metrics < " + file);
  EXPECT_EQ(check_status, 0) << check_out;
  EXPECT_EQ(check_out, "");

  // node_exporter with the textfile collector alone, on loopback.
  Exporter exporter;
  std::string scraped;
  int port = -1;
  for (int attempt = 0; attempt < 3 && scraped.empty(); ++attempt) {  // another process may take the port
    port = free_port();
    ASSERT_GT(port, 0);
    if (exporter.pid > 0) {
      kill(exporter.pid, SIGKILL);
      waitpid(exporter.pid, nullptr, 0);
      close(exporter.out);
    }
    exporter.pid = box.spawn({kExporter, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                              "--collector.disable-defaults", "--collector.textfile",
                              "--collector.textfile.directory=" + prom},
                             {{"LD_PRELOAD", "<unset>"}}, &exporter.out);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline && waitpid(exporter.pid, nullptr, WNOHANG) == 0) {
      const auto [status, body] =
          shell(std::string(kCurl) + " -sS --max-time 2 http://127.0.0.1:" + std::to_string(port) + "/metrics");
      if (status == 0 && body.find("node_textfile_scrape_error") != std::string::npos) {
        scraped = body;
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
  }
  ASSERT_FALSE(scraped.empty()) << "node_exporter did not serve on port " << port;
  EXPECT_NE(scraped.find("\nnode_textfile_scrape_error 0\n"), std::string::npos) << scraped;
  EXPECT_NE(scraped.find("node_textfile_mtime_seconds{file=\"" + file + "\"}"), std::string::npos) << scraped;
  // Every sample of our file, with its exact value, and nothing else of ours.
  const auto ours = samples(slurp(file), "gpumemprof_");
  EXPECT_EQ(ours.size(), 14u);
  EXPECT_EQ(samples(scraped, "gpumemprof_"), ours);
  const auto m = read_json_file(box.only_run_dir() + "/manifest.json");
  const std::string L = "{device=\"0\",executable=\"prog_ops\",host=\"" + m["host"].get<std::string>() +
                        "\",job_id=\"4711\",pid=\"" + std::to_string(m["pid"].get<int>()) + "\",pid_namespace=\"" +
                        pid_namespace() + "\",rank=\"3\",}";
  EXPECT_EQ(ours.at("gpumemprof_allocated_bytes" + L), 110.0 * MiB);
  EXPECT_EQ(ours.at("gpumemprof_reserved_peak_bytes" + L), 130.0 * MiB);
  EXPECT_EQ(ours.at("gpumemprof_failed_allocations_total" + L), 1.0);
  // The HELP and TYPE reach Prometheus too.
  EXPECT_NE(scraped.find("# TYPE gpumemprof_failed_allocations_total counter\n"), std::string::npos) << scraped;
  EXPECT_NE(scraped.find("# TYPE gpumemprof_allocated_bytes gauge\n"), std::string::npos) << scraped;
}

}  // namespace
}  // namespace gmp::test
