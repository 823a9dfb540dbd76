// `gpumemprof top` on live files written by hand (live_files.h, the collector's own writer): the
// plain table (--once), --json, its refusals, and the screen driven through tmux (a private
// server: tmux -L gmp-test-PID), step by step, each step's figures read off the pane. No
// assertion depends on timing: each waits (up to a bound) until the pane shows what it must.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "harness.h"
#include "human_text.h"
#include "live_files.h"
#include "temp_dir.h"

namespace gmp::test {
namespace {

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;
constexpr uint64_t kNoSuchPid = 999'999'999;

// A run directory as the collector leaves it while its process runs: manifest.json, live.bin, and
// attribution.jsonl naming one Python frame per stack.
struct LiveRun {
  LiveRun(const std::string& dir, const std::string& program, int64_t rank) {
    mkdir(dir.c_str(), 0700);
    std::ofstream(dir + "/manifest.json") << "{}";
    file = std::make_unique<LiveRunFile>(dir);
    live::set_text(file->f().program, program);
    file->f().rank = rank;
    file->f().world_size = 2;
  }
  live::LiveFile& f() { return file->f(); }
  std::unique_ptr<LiveRunFile> file;
};

// rank0: this test's own process (alive), train.py, 1 GiB allocated of 2 GiB reserved on device 0,
// with PyTorch's figures and NVML's; rank1: a process that is gone (dead), eval.py, on device 1.
struct TwoRanks {
  TempDir root;
  LiveRun r0{root.path + "/rank0.train.py.1", "train.py", 0};
  LiveRun r1{root.path + "/rank1.eval.py.2", "eval.py", 1};

  TwoRanks() {
    live::LiveDevice& d = r0.file->device(0, 0);
    d.allocated = 1 * kGiB;
    d.allocated_peak = 3 * kGiB / 2;
    d.reserved = 2 * kGiB;
    d.reserved_peak = 5 * kGiB / 2;
    d.flags = live::LiveDevice::kFramework | live::LiveDevice::kNvml;
    d.tensors = 768 * kMiB;
    d.cached = 256 * kMiB;
    d.outside = 1 * kGiB;
    d.nvml_device_used = 10 * kGiB;
    d.nvml_device_total = 80 * kGiB;
    d.alerts_fired = 2;
    d.ooms = 1;
    r0.f().top[0] = {0x7000, 512 * kMiB, 0, 5, 1, 0, 0, 0, live::LiveTop::kDriver, {}};
    std::ofstream(r0.file->dir() + "/attribution.jsonl")
        << R"({"type":"pyframe","id":3,"file":"/work/train.py","function":"forward","line":42})" "\n"
        << R"({"type":"stack","id":5,"frames":["py:3"]})" "\n";
    EXPECT_TRUE(r0.file->rewrite());
    live::LiveDevice& e = r1.file->device(0, 1);
    e.allocated = 512 * kMiB;
    e.reserved = 512 * kMiB;
    e.reserved_peak = 1 * kGiB;
    r1.f().pid = kNoSuchPid;
    EXPECT_TRUE(r1.file->rewrite());
  }
};

// The AGE column counts seconds: shown as "AGE" in the expected lines.
std::string without_age(const std::string& text) {
  return std::regex_replace(text, std::regex(R"(  +(\d+s|\d+m\d\ds)  )"), "  AGE  ");
}

TEST(LiveTop, OncePrintsTheTableWithExactFigures) {
  TwoRanks job;
  RunResult r = run_tool({"top", "--root", job.root.path, "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::istringstream lines(r.out);
  std::string header, titles, row0, row1;
  std::getline(lines, header);
  std::getline(lines, titles);
  std::getline(lines, row0);
  std::getline(lines, row1);
  EXPECT_NE(header.find("  2 processes  "), std::string::npos) << header;
  const std::string pid = std::to_string(getpid());
  const std::string pad(pid.size() > 9 ? 0 : 9 - pid.size(), ' ');
  // Sorted by ALLOCATED, largest first.
  EXPECT_EQ(titles, "      PID  PROCESS   RANK  DEV   ALLOCATED    RESERVED      PEAK     TENSORS       CACHE   OUTSIDE"
                    "      NVML USED/TOTAL  ALERTS  OOMS  AGE  STATE");
  EXPECT_EQ(without_age(row0), pad + pid + "  train.py     0    0    1.00 GiB    2.00 GiB  2.50 GiB  768.00 MiB  256.00 MiB"
                                             "  1.00 GiB  10.00 GiB/80.00 GiB       2     1  AGE  running")
      << row0;
  EXPECT_EQ(without_age(row1), "999999999  eval.py      1    1  512.00 MiB  512.00 MiB  1.00 GiB           -           -"
                               "         -                    -       0     0  AGE  dead")
      << row1;
}

TEST(LiveTop, JsonHasTheExactFigures) {
  TwoRanks job;
  RunResult r = run_tool({"top", "--root", job.root.path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["processes"].size(), 2u);
  const nlohmann::json& p = j["processes"][0];
  EXPECT_EQ(p["pid"], static_cast<uint64_t>(getpid()));
  EXPECT_EQ(p["program"], "train.py");
  EXPECT_EQ(p["rank"], 0);
  EXPECT_EQ(p["world_size"], 2);
  EXPECT_EQ(p["local_rank"], nullptr);
  EXPECT_EQ(p["run_dir"], job.r0.file->dir());
  EXPECT_EQ(p["state"], "running");
  EXPECT_EQ(p["torn"], false);
  ASSERT_EQ(p["devices"].size(), 1u);
  const nlohmann::json& d = p["devices"][0];
  EXPECT_EQ(d["ordinal"], 0);
  EXPECT_EQ(d["allocated"], 1 * kGiB);
  EXPECT_EQ(d["allocated_peak"], 3 * kGiB / 2);
  EXPECT_EQ(d["reserved"], 2 * kGiB);
  EXPECT_EQ(d["reserved_peak"], 5 * kGiB / 2);
  EXPECT_EQ(d["framework"]["tensors"], 768 * kMiB);
  EXPECT_EQ(d["framework"]["cached"], 256 * kMiB);
  EXPECT_EQ(d["framework"]["outside"], 1 * kGiB);
  EXPECT_EQ(d["nvml"]["device_used"], 10 * kGiB);
  EXPECT_EQ(d["nvml"]["device_total"], 80 * kGiB);
  EXPECT_EQ(d["graphs"], nullptr);
  EXPECT_EQ(d["alerts_fired"], 2);
  EXPECT_EQ(d["ooms"], 1);
  const nlohmann::json& q = j["processes"][1];
  EXPECT_EQ(q["pid"], kNoSuchPid);
  EXPECT_EQ(q["state"], "dead");
  EXPECT_EQ(q["devices"][0]["ordinal"], 1);
  EXPECT_EQ(q["devices"][0]["framework"], nullptr);
  EXPECT_EQ(q["devices"][0]["nvml"], nullptr);
  EXPECT_EQ(j["unreadable"], nlohmann::json::array());
}

TEST(LiveTop, AProcessWithNoDeviceHasARowAndAGarbageFileIsSkipped) {
  TempDir root;
  LiveRun idle(root.path + "/idle.1", "idle.py", -1);
  ASSERT_TRUE(idle.file->rewrite());
  mkdir((root.path + "/bad.2").c_str(), 0700);
  std::ofstream(root.path + "/bad.2/manifest.json") << "{}";
  std::ofstream(root.path + "/bad.2/live.bin") << "garbage";
  RunResult r = run_tool({"top", "--root", root.path, "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpumemprof top: skipped " + root.path +
                       "/bad.2/live.bin: not a live file of this version (bad magic, version or size)\n");
  EXPECT_NE(without_age(r.out).find("  idle.py     -    -          -         -     -        -      -        -"
                                    "                -       -     -  AGE  running"),
            std::string::npos)
      << r.out;
}

TEST(LiveTop, RefusesBadValuesBeforeReadingAnything) {
  const std::string intervals = "accepted: a number of seconds from 0.1 to 86400, decimals allowed (0.5, 2)\n";
  for (const char* bad : {"0.05", "abc", "-1", "1e3", ""}) {
    RunResult r = run_tool({"top", "--interval", bad, "--once"});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(r.err, std::string("gpumemprof top: invalid --interval '") + bad + "'; " + intervals);
    EXPECT_EQ(r.out, "");
  }
  RunResult keep = run_tool({"top", "--keep", "soon"});
  EXPECT_EQ(keep.exit_code, 2);
  EXPECT_EQ(keep.err, "gpumemprof top: invalid --keep 'soon'; accepted: a number of seconds from 0 to 86400, "
                      "decimals allowed (30, 0.5)\n");
  RunResult missing = run_tool({"top", "--interval"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "gpumemprof top: --interval needs a value; accepted: --interval SECONDS\n");
  RunResult extra = run_tool({"top", "somewhere"});
  EXPECT_EQ(extra.exit_code, 2);
  EXPECT_EQ(extra.err, "gpumemprof top: takes no argument, got 'somewhere'; accepted: options only (--root DIR for "
                       "the run directories under DIR)\n");
  RunResult unknown = run_tool({"top", "--bogus"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err, "gpumemprof top: unknown option '--bogus'; accepted: --once, --json, --interval, --root, "
                         "--all, --keep, --help\n");
  EXPECT_EQ(run_tool({"top", "--interval", "0.1", "--root", "/nonexistent-gmp", "--once"}).err,
            "gpumemprof top: /nonexistent-gmp is not a directory\n");
}

TEST(LiveTop, ReadsTheRegistryAndRefusesOneOthersMayEnter) {
  TwoRanks job;
  TempDir t;
  const std::string registry = t.path + "/registry";
  mkdir(registry.c_str(), 0700);
  const live::LiveFile& f = job.r0.f();
  ASSERT_EQ(symlink(job.r0.file->dir().c_str(),
                    (registry + "/" + live::registry_entry_name(f.pid, f.start_ticks)).c_str()),
            0);
  Sandbox box;
  const std::map<std::string, std::string> env = {{"LD_PRELOAD", "<unset>"}, {"GPUMEMPROF_LIVE_REGISTRY", registry}};
  RunResult r = box.run({Paths::tool(), "top", "--json"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["run_dir"], job.r0.file->dir());
  chmod(registry.c_str(), 0755);
  r = box.run({Paths::tool(), "top", "--once"}, env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof top: not reading the registry " + registry +
                       ": mode 0755: others may read or enter it (0700 is needed); another user could plant entries "
                       "there\n");
  EXPECT_EQ(r.out, "");
}

// The screen, through a private tmux server.
class Tmux {
 public:
  Tmux() : socket_("gmp-test-" + std::to_string(getpid())) {}
  // The server goes, and its socket with it (tmux leaves the file behind when its last session ends).
  ~Tmux() {
    command("kill-server");
    if (socket_path_.find("/" + socket_) != std::string::npos) unlink(socket_path_.c_str());
  }
  // A session "gmp" of `width` x `height` running `cmd`.
  bool start(const std::string& cmd, int width, int height) {
    if (command("new-session -d -s gmp -x " + std::to_string(width) + " -y " + std::to_string(height) + " '" + cmd +
                "'") != 0) {
      return false;
    }
    socket_path_ = output("display-message -p -t gmp '#{socket_path}'");
    while (!socket_path_.empty() && socket_path_.back() == '\n') socket_path_.pop_back();
    return true;
  }
  int command(const std::string& args) const {
    return std::system(("tmux -u -L " + socket_ + " " + args + " >/dev/null 2>&1").c_str());
  }
  std::string capture() const { return output("capture-pane -p -t gmp"); }
  std::string output(const std::string& args) const {
    std::string out;
    FILE* p = popen(("tmux -u -L " + socket_ + " " + args + " 2>/dev/null").c_str(), "r");
    if (p == nullptr) return out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
    return out;
  }
  // Waits (up to 15 s) until the pane shows what `ok` looks for; the last capture either way, and
  // a failure saying what the pane showed when it never did.
  template <typename Ok>
  std::string wait_for(Ok ok, const std::string& what) const {
    std::string shown;
    for (int i = 0; i < 300; ++i) {
      shown = capture();
      if (ok(shown)) return shown;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "the pane never showed " << what << "; it shows:\n" << shown;
    return shown;
  }
  std::string wait_for_text(const std::string& text) const {
    return wait_for([&](const std::string& s) { return s.find(text) != std::string::npos; }, "'" + text + "'");
  }
  // Key names (Enter, Left) or a character, quoted for the shell.
  void keys(const std::string& keys) const { command("send-keys -t gmp '" + keys + "'"); }

 private:
  std::string socket_;
  std::string socket_path_;
};

bool has_tmux() { return std::system("tmux -V >/dev/null 2>&1") == 0; }

// What the pane's shell wrote into `file` once the command ended (`echo $? > file`), waiting up to
// 15 s; "" when it never did.
std::string exit_status_in(const std::string& file) {
  std::string status;
  for (int i = 0; i < 300 && status.empty(); ++i) {
    std::ifstream(file) >> status;
    if (status.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return status;
}

size_t widest_line(const std::string& text) {
  std::istringstream in(text);
  size_t widest = 0;
  for (std::string line; std::getline(in, line);) widest = std::max(widest, tool::display_width(line));
  return widest;
}

TEST(LiveTop, TheScreenFollowsTheFilesAndTheKeys) {
  if (!has_tmux()) GTEST_SKIP() << "tmux is not installed (apt-get install tmux)";
  TwoRanks job;
  const std::string status_file = job.root.path + "/status";
  Tmux tmux;
  const std::string cmd = "LANG=C.UTF-8 TERM=screen " + Paths::tool() + " top --root " + job.root.path +
                          " --interval 0.2; echo $? > " + status_file;
  ASSERT_TRUE(tmux.start(cmd, 120, 40));
  std::string shown = tmux.wait_for_text("2 processes");
  ASSERT_NE(shown.find("sort ALLOCATED (descending)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("1.00 GiB"), std::string::npos) << shown;
  EXPECT_NE(shown.find("10.00 GiB/80.00 GiB"), std::string::npos) << shown;
  // Step 1: rank 0 allocates; the next refresh shows it.
  live::LiveFile& f = job.r0.f();
  f.devices[0].allocated = 3 * kGiB;
  f.devices[0].reserved = 4 * kGiB;
  ASSERT_TRUE(job.r0.file->publish());
  shown = tmux.wait_for_text("3.00 GiB");
  EXPECT_NE(shown.find("4.00 GiB"), std::string::npos) << shown;
  EXPECT_LT(shown.find("train.py"), shown.find("eval.py")) << shown;  // largest first
  // The sort column moves right, then the order reverses.
  tmux.keys(">");
  shown = tmux.wait_for_text("sort RESERVED (descending)");
  EXPECT_NE(shown.find("sort RESERVED (descending)"), std::string::npos) << shown;
  tmux.keys("r");
  shown = tmux.wait_for_text("sort RESERVED (ascending)");
  ASSERT_NE(shown.find("sort RESERVED (ascending)"), std::string::npos) << shown;
  EXPECT_LT(shown.find("eval.py"), shown.find("train.py")) << shown;
  tmux.keys("Left");
  shown = tmux.wait_for_text("sort ALLOCATED (ascending)");
  EXPECT_NE(shown.find("sort ALLOCATED (ascending)"), std::string::npos) << shown;
  // Enter: the detail of the selected process (train.py, selected first and followed through the
  // sorts): its largest allocation's call site and the command to read the run afterwards.
  tmux.keys("Enter");
  shown = tmux.wait_for_text("gpumemprof report " + job.r0.file->dir());
  EXPECT_NE(shown.find("gpumemprof report " + job.r0.file->dir()), std::string::npos) << shown;
  EXPECT_NE(shown.find("512.00 MiB   driver  device 0  forward (train.py:42)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("allocated 3.00 GiB (peak 1.50 GiB)"), std::string::npos) << shown;
  // Pause, and resume: figures published meanwhile show once resumed.
  tmux.keys("p");
  shown = tmux.wait_for_text("PAUSED");
  EXPECT_NE(shown.find("PAUSED"), std::string::npos) << shown;
  f.devices[0].allocated = 5 * kGiB;
  ASSERT_TRUE(job.r0.file->publish());
  tmux.keys("p");
  shown = tmux.wait_for_text("allocated 5.00 GiB");
  EXPECT_NE(shown.find("allocated 5.00 GiB"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("PAUSED"), std::string::npos) << shown;
  // Back to the table; then a narrow terminal: columns dropped from the right, nothing wrapped.
  tmux.keys("Escape");
  shown = tmux.wait_for_text("NVML USED/TOTAL");  // 120 columns: up to NVML's
  EXPECT_NE(shown.find("PROCESS"), std::string::npos) << shown;
  ASSERT_EQ(tmux.command("resize-window -t gmp -x 40 -y 10"), 0);
  shown = tmux.wait_for(
      [](const std::string& s) { return s.find("RESERVED") == std::string::npos && s.find("PID") != std::string::npos; },
      "the table for 40 columns");
  EXPECT_LE(widest_line(shown), 40u) << shown;
  EXPECT_NE(shown.find("PID  PROCESS   RANK  DEV\n"), std::string::npos) << shown;
  ASSERT_EQ(tmux.command("resize-window -t gmp -x 200 -y 40"), 0);
  shown = tmux.wait_for_text("STATE");
  EXPECT_NE(shown.find("5.00 GiB"), std::string::npos) << shown;
  // q quits with status 0.
  tmux.keys("q");
  EXPECT_EQ(exit_status_in(status_file), "0");
}

// gpumemprof run --live on the fake driver: a real profiled program allocating step by step, the
// view of its run directory showing each step's figures, the command's output in its file, and the
// usual summary once q leaves the view.
TEST(RunLive, ShowsTheCommandStepByStepThenItsSummary) {
  if (!has_tmux()) GTEST_SKIP() << "tmux is not installed (apt-get install tmux)";
  TempDir t;
  const std::string root = t.path + "/runs", a = t.path + "/a", b = t.path + "/b";
  const std::string status_file = t.path + "/status", err_file = t.path + "/stderr";
  Tmux tmux;
  const std::string cmd = "LANG=C.UTF-8 TERM=screen LD_LIBRARY_PATH=" + Paths::fake_dir() +
                          " FAKE_CUDA_CAPACITY=16G GPUMEMPROF_LIVE_REGISTRY=" + t.path + "/registry " +
                          Paths::tool() + " run --live -o " + root + " -- " + Paths::bin("prog_ops") +
                          " print:hello alloc:1M alloc:2M wait:" + a + " free:0 wait:" + b + " 2>" + err_file +
                          "; echo $? > " + status_file;
  ASSERT_TRUE(tmux.start(cmd, 160, 30));
  std::string shown = tmux.wait_for_text("3.00 MiB");
  EXPECT_NE(shown.find("prog_ops"), std::string::npos) << shown;
  EXPECT_NE(shown.find("runs; its output goes to " + root + "/output.log"), std::string::npos) << shown;
  std::ofstream(a) << "";
  shown = tmux.wait_for([](const std::string& s) { return s.find("2.00 MiB") != std::string::npos &&
                                                          s.find("3.00 MiB") != std::string::npos; },
                        "allocated 2.00 MiB with its 3.00 MiB peak");
  std::ofstream(b) << "";
  shown = tmux.wait_for_text("prog_ops exited 0; q for the summary");
  EXPECT_NE(shown.find("exited"), std::string::npos) << shown;  // the STATE column
  tmux.keys("q");
  EXPECT_EQ(exit_status_in(status_file), "0");
  std::stringstream err, out;
  err << std::ifstream(err_file).rdbuf();
  out << std::ifstream(root + "/output.log").rdbuf();
  EXPECT_EQ(out.str(), "hello\nok\n");
  EXPECT_NE(err.str().find("gpumemprof run: prog_ops's output is in " + root + "/output.log"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("1 profiled process under " + root), std::string::npos) << err.str();
}

TEST(RunLive, NeedsATerminalAndRunsNothingWithoutOne) {
  TempDir t;
  const RunResult r = run_tool({"run", "--live", "-o", t.path + "/runs", "--", "/bin/touch", t.path + "/ran"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof run: --live needs a terminal on stdin and stdout; leave it out here (gpumemprof top "
                   "--root ROOT shows the run from a terminal)\n");
  EXPECT_FALSE(exists(t.path + "/runs"));
  EXPECT_FALSE(exists(t.path + "/ran"));
}

}  // namespace
}  // namespace gmp::test
