// `gpumemprof check` and the limits of `gpumemprof run` (docs/check.md): the CI gate's lines and
// exit statuses on runs the fake driver leaves behind.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness.h"

namespace gmp::test {
namespace {

namespace fs = std::filesystem;

// Runs prog_ops OPS under the shim into the run directory `dir`; as rank `rank` of a two-process
// torchrun job when given. The fake devices hold 16 GiB.
void profile(const Sandbox& box, const std::string& dir, std::vector<std::string> ops, std::optional<int> rank = {}) {
  std::map<std::string, std::string> env{{"GPUMEMPROF_OUTPUT", dir}};
  if (rank) env.insert({{"RANK", std::to_string(*rank)}, {"LOCAL_RANK", std::to_string(*rank)}, {"WORLD_SIZE", "2"}});
  ops.insert(ops.begin(), Paths::bin("prog_ops"));
  const RunResult r = box.run(ops, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

RunResult check(std::vector<std::string> args) {
  args.insert(args.begin(), "check");
  return run_tool(args);
}

// A job of two ranks under ROOT: rank 0 peaks at 9 MiB and leaves 8 MiB allocated; rank 1 peaks at
// 20 MiB, leaves it allocated, and has one out-of-memory failure.
std::string two_rank_job(const Sandbox& box) {
  const std::string root = box.dir() + "/job";
  fs::create_directory(root);
  profile(box, root + "/rank0", {"alloc:8M", "alloc:1M", "free:1"}, 0);
  profile(box, root + "/rank1", {"alloc:20M", "expect_fail:32G"}, 1);
  return root;
}

TEST(Check, PassingLimitsSayWhatHeldWithTheHighestFigures) {
  Sandbox box;
  const std::string root = two_rank_job(box);
  RunResult r = check({root + "/rank0", "--max-peak", "9MiB", "--max-reserved=10M", "--max-leak", "8M", "--no-oom"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gpumemprof check: passed on " + root +
                       "/rank0 (1 process, 1 per-process device): highest peak allocated 9.00 MiB (rank 0, device 0), "
                       "--max-peak 9.00 MiB; highest peak reserved 9.00 MiB (rank 0, device 0), --max-reserved 10.00 "
                       "MiB; highest live at exit 8.00 MiB (rank 0), --max-leak 8.00 MiB; no out-of-memory failure\n");
  EXPECT_EQ(r.err, "");
}

TEST(Check, EachBrokenLimitIsOneLineAndStatus1) {
  Sandbox box;
  const std::string root = two_rank_job(box);
  const std::string rank1 = root + "/rank1";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--max-peak", "1.5G"}, ""},
      {{"--max-peak", "16M"}, "rank 1, device 0: peak allocated 20.00 MiB, over --max-peak 16.00 MiB\n"},
      {{"--max-reserved", "19MiB"}, "rank 1, device 0: peak reserved 20.00 MiB, over --max-reserved 19.00 MiB\n"},
      {{"--max-leak", "0"},
       "rank 1: live at exit 20.00 MiB, over --max-leak 0 B (1 allocation, all devices together)\n"},
      {{"--no-oom"}, "rank 1: 1 out-of-memory failure (device 0), and --no-oom allows none\n"},
  };
  for (const auto& [limit, line] : cases) {
    std::vector<std::string> args{rank1};
    args.insert(args.end(), limit.begin(), limit.end());
    SCOPED_TRACE(limit[0]);
    RunResult r = check(args);
    if (line.empty()) {
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
      continue;
    }
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "gpumemprof check: " + line);
    EXPECT_EQ(r.err, "");
  }
}

TEST(Check, AJobRootChecksEveryRankAndNamesTheOneThatBroke) {
  Sandbox box;
  const std::string root = two_rank_job(box);
  RunResult r = check({root, "--max-peak", "16MiB", "--max-leak", "10M"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out,
            "gpumemprof check: rank 1, device 0: peak allocated 20.00 MiB, over --max-peak 16.00 MiB\n"
            "gpumemprof check: rank 1: live at exit 20.00 MiB, over --max-leak 10.00 MiB (1 allocation, all devices "
            "together)\n");
  r = check({root, "--max-peak", "20MiB"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gpumemprof check: passed on " + root +
                       " (2 processes, 2 per-process devices): highest peak allocated 20.00 MiB (rank 1, device 0), "
                       "--max-peak 20.00 MiB\n");
}

TEST(Check, GrowthOverABaselineByRank) {
  Sandbox box;
  const std::string base = two_rank_job(box);
  const std::string now = box.dir() + "/now";
  fs::create_directory(now);
  profile(box, now + "/r0", {"alloc:9M"}, 0);   // as much as before
  profile(box, now + "/r1", {"alloc:23M"}, 1);  // +15%
  RunResult r = check({now, "--baseline", base, "--max-growth", "10%"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out,
            "gpumemprof check: rank 1, device 0: peak allocated 23.00 MiB against the baseline's 20.00 MiB "
            "(+15.00%), over --max-growth 10%\n");
  r = check({now, "--baseline=" + base, "--max-growth=15"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gpumemprof check: passed on " + now +
                       " (2 processes, 2 per-process devices): highest growth +15.00% (rank 1, device 0: 23.00 MiB "
                       "against the baseline's 20.00 MiB), --max-growth 15%\n");
  // One rank against the job: the baseline's process of the same rank.
  r = check({now + "/r0", "--baseline", base, "--max-growth", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A baseline that lacks a rank is unreadable input.
  r = check({now, "--baseline", base + "/rank0", "--max-growth", "10"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof check: baseline: " + base +
                       "/rank0 has no process for rank 1 (matched by rank when both record ranks, else by position; "
                       "it holds 1 process)\n");
  EXPECT_EQ(r.out, "");
}

TEST(Check, UnreadableOrTruncatedInputIsStatus2) {
  Sandbox box;
  const std::string root = two_rank_job(box);
  // A summary.json cut short: that rank cannot be read, so the job is not checked at all.
  const std::string summary = root + "/rank1/summary.json";
  fs::resize_file(summary, fs::file_size(summary) / 2);
  RunResult r = check({root, "--max-peak", "1G"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("gpumemprof check: " + summary + " is not valid JSON", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = check({box.dir() + "/missing", "--no-oom"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof check: " + box.dir() + "/missing is not a directory\n");
  r = check({root + "/rank0", "--baseline", box.dir() + "/missing", "--max-growth", "5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof check: baseline: " + box.dir() + "/missing is not a directory\n");

  // A process killed before its summary.json: checked on its trace, with a note.
  fs::remove(root + "/rank0/summary.json");
  r = check({root + "/rank0", "--max-leak", "4M"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(
      r.out,
      "gpumemprof check: note: rank 0: summary.json is missing (the process did not exit normally); its figures were "
      "rebuilt from the trace, which lacks the events recorded after its last write\n"
      "gpumemprof check: rank 0: live at exit 8.00 MiB, over --max-leak 4.00 MiB (1 allocation, all devices "
      "together)\n");
}

// summary.json with the text `raw` in place of the figure at `pointer` (a JSON pointer).
void set_raw_figure(const std::string& summary, const std::string& pointer, const std::string& raw) {
  nlohmann::json j = read_json_file(summary);
  const std::string marker = "\"<raw figure>\"";
  j[nlohmann::json::json_pointer(pointer)] = "<raw figure>";
  std::string text = j.dump();
  text.replace(text.find(marker), marker.size(), raw);
  std::ofstream(summary) << text;
}

// A figure a limit reads that is not a count is unreadable input (status 2), never read as 0: a
// peak of 4.5e9 would otherwise pass --max-peak 1GiB as "highest peak allocated 0 B".
TEST(Check, AFigureThatIsNoCountIsUnreadable) {
  Sandbox box;
  const std::string root = two_rank_job(box);
  const std::string summary = root + "/rank1/summary.json";
  const std::string pristine = read_json_file(summary).dump();
  const std::vector<std::pair<std::string, std::string>> figures = {
      {"/devices/0/allocated_bytes/peak", "allocated_bytes.peak"},
      {"/devices/0/reserved_bytes/peak", "reserved_bytes.peak"},
      {"/devices/0/by_kind/graph/reserved/peak", "by_kind.graph.reserved.peak"},
  };
  const std::vector<std::pair<std::string, std::string>> values = {
      {"4.5e9", "4500000000.0"}, {"-5", "-5"}, {"\"x\"", "\"x\""}, {"null", "null"},
      {"18446744073709551616", "1.8446744073709552e+19"}};
  for (const auto& [pointer, name] : figures) {
    for (const auto& [raw, shown] : values) {
      SCOPED_TRACE(pointer + " = " + raw);
      std::ofstream(summary) << pristine;
      set_raw_figure(summary, pointer, raw);
      RunResult r = check({root, "--max-peak", "1GiB"});
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(r.err, "gpumemprof check: " + summary + ": devices[0]." + name + " is " + shown + ", not a count\n");
    }
  }
  // The whole process's figures, and keys every summary.json has: missing is unreadable too.
  std::ofstream(summary) << pristine;
  set_raw_figure(summary, "/live_at_exit/bytes", "1e3");
  RunResult r = check({root, "--no-oom"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof check: " + summary + ": live_at_exit.bytes is 1000.0, not a count\n");
  nlohmann::json j = nlohmann::json::parse(pristine);
  j["oom"].erase("failures");
  std::ofstream(summary) << j.dump();
  r = check({root, "--max-leak", "1G"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof check: " + summary + ": oom.failures is missing\n");

  // What older runs lack may be absent: CUDA graph figures, the framework's, the failures list.
  j = nlohmann::json::parse(pristine);
  j["devices"][0]["by_kind"].erase("graph");
  j.erase("failed_allocations");
  j.erase("graphs");
  std::ofstream(summary) << j.dump();
  r = check({root, "--max-peak", "1GiB", "--max-graph-memory", "1GiB"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("gpumemprof check: passed on " + root + " (2 processes, 2 per-process devices)", 0), 0u)
      << r.out;
  // ... but present, they must be valid: a private pool's peak too.
  j["devices"][0]["framework"] = {{"ooms", 0}, {"private_pools", {{{"pool", "0,1"}, {"reserved", {{"peak", -1}}}}}}};
  std::ofstream(summary) << j.dump();
  r = check({root, "--max-graph-memory", "1GiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof check: " + summary +
                       ": devices[0].framework.private_pools[0].reserved.peak is -1, not a count\n");
}

// A job whose rank directories are named as `gpumemprof run` names them, owned by `owner`.
std::string four_rank_job(const Sandbox& box, uid_t owner) {
  const std::string root = box.dir() + "/job4";
  fs::create_directory(root);
  for (int rank = 0; rank < 4; ++rank) {
    profile(box, root + "/rank" + std::to_string(rank) + ".prog_ops." + std::to_string(100 + rank),
            {"alloc:" + std::to_string(rank + 1) + "M"}, rank);
  }
  for (const auto& e : fs::recursive_directory_iterator(root)) EXPECT_EQ(lchown(e.path().c_str(), owner, owner), 0);
  EXPECT_EQ(lchown(root.c_str(), owner, owner), 0);
  EXPECT_EQ(chmod(box.dir().c_str(), 0755), 0);
  return root;
}

// One rank that cannot be read makes the whole job unreadable (docs/check.md): a gate that skipped
// it would pass a four-rank job as two processes. Seen as a second user (nobody): a rank directory
// of mode 000 and another user's; seen by anyone, a symlink loop where a rank should be.
TEST(Check, ARankThatCannotBeReadMakesTheJobUnreadable) {
  if (geteuid() != 0) GTEST_SKIP() << "reading as another user needs root";
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no user nobody";
  const uid_t user = nobody->pw_uid;
  Sandbox box;
  const std::string root = four_rank_job(box, user);
  ASSERT_EQ(chmod((root + "/rank2.prog_ops.102").c_str(), 0), 0);
  for (const auto& e : fs::recursive_directory_iterator(root + "/rank3.prog_ops.103")) {
    ASSERT_EQ(lchown(e.path().c_str(), 0, 0), 0);
  }
  ASSERT_EQ(lchown((root + "/rank3.prog_ops.103").c_str(), 0, 0), 0);
  const std::string unreadable = "gpumemprof check: cannot read directory " + root +
                                 "/rank2.prog_ops.102: Permission denied\n"
                                 "gpumemprof check: cannot read directory " + root +
                                 "/rank3.prog_ops.103: Permission denied\n";
  RunResult r = run_tool_as(user, {"check", root, "--max-peak", "1GiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, unreadable);
  // The job view reads what it can and names the ranks it could not.
  r = run_tool_as(user, {"report", root});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("not read (2):\n  rank 2: cannot read directory " + root +
                       "/rank2.prog_ops.102: Permission denied\n  rank 3: cannot read directory " + root +
                       "/rank3.prog_ops.103: Permission denied\n"),
            std::string::npos)
      << r.out;
  r = run_tool_as(user, {"check", root + "/rank3.prog_ops.103", "--no-oom"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof check: cannot read directory " + root + "/rank3.prog_ops.103: Permission denied\n");

  // A symlink loop: root reads everything else, and still cannot tell what the loop is.
  ASSERT_EQ(symlink("rank4.prog_ops.104", (root + "/rank4.prog_ops.104").c_str()), 0);
  r = check({root, "--max-peak", "1GiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof check: cannot examine " + root +
                       "/rank4.prog_ops.104: Too many levels of symbolic links\n");
  ASSERT_EQ(unlink((root + "/rank4.prog_ops.104").c_str()), 0);
  r = check({root, "--max-peak", "1GiB"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("gpumemprof check: passed on " + root + " (4 processes, 4 per-process devices)", 0), 0u)
      << r.out;
}

// A run still writing, whose oldest segments GPUMEMPROF_TRACE_MAX deleted (no summary.json yet, no
// trace.gmpt): checked on the kept window, whatever the writer deletes meanwhile; and the words
// name the segments kept, not a trace.gmpt that is not there.
TEST(Check, ALiveRunWhoseOldestSegmentsWentIsCheckedOnTheKeptWindow) {
  Sandbox box;
  const std::string dir = box.dir() + "/live";
  int out = -1;
  const pid_t pid = box.spawn({Paths::bin("prog_ops"), "alloc:5M", "churn:100000000"},
                              {{"GPUMEMPROF_OUTPUT", dir}, {"GPUMEMPROF_TRACE_MAX", "1MiB"}, {"GPUMEMPROF_STACKS", "0"}},
                              &out);
  // Killed however the test ends (a failed ASSERT returns early): it would churn for minutes.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
    }
  } reaper{pid};
  // Segment 0 (trace.gmpt) deleted: the writer keeps rotating from here on.
  for (int waited = 0; waited < 3000 && (!exists(dir + "/manifest.json") || exists(dir + "/trace.gmpt")); ++waited) {
    usleep(10'000);
  }
  ASSERT_TRUE(exists(dir + "/manifest.json") && !exists(dir + "/trace.gmpt"));
  for (int i = 0; i < 40; ++i) {
    RunResult r = check({dir, "--max-peak", "1GiB"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("gpumemprof check: passed on " + dir + " (1 process, 1 per-process device)"),
              std::string::npos)
        << r.out;
  }
  kill(pid, SIGKILL);
  wait_for(pid, out, -1, 30);
  reaper.pid = 0;  // reaped: its pid may be another process's from now on
  close(out);
  RunResult r = run_tool({"report", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("trace.gmpt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" events in trace.0"), std::string::npos) << r.out;
}

TEST(Check, BadOptionsAreRefusedBeforeAnythingIsRead) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> rows = {
      {{"/nowhere", "--max-peak", "40 GB"},
       "--max-peak '40 GB' is not a size or a GPU name; accepted: a byte count with an optional unit K, M, G, KiB, "
       "MiB or GiB (e.g. 1M, 512KiB), or a GPU name: L4, A10, A100-40GB, A100-80GB, H100-80GB, H200, RTX-4090"},
      {{"/nowhere", "--max-leak"},
       "--max-leak needs a value; accepted: a byte count with an optional unit K, M, G, KiB, MiB or GiB (e.g. 1M, "
       "512KiB)"},
      {{"/nowhere", "--max-growth", "ten", "--baseline", "/b"},
       "--max-growth 'ten' is not a percentage; accepted: a number, decimals allowed, an optional % (10, 2.5%)"},
      {{"/nowhere", "--max-growth", "10"},
       "--max-growth without --baseline; accepted: --baseline DIR --max-growth PERCENT, together"},
      {{"/nowhere", "--baseline", "/b"},
       "--baseline without --max-growth; accepted: --baseline DIR --max-growth PERCENT, together"},
      {{"/nowhere", "--max-peek", "1G"},
       "unknown option '--max-peek'; accepted: --max-peak, --max-reserved, --max-leak, --max-graph-memory, --max-category, "
       "--no-oom, "
       "--baseline, --max-growth, --help"},
      {{"/nowhere"},
       "nothing to check; give at least one of --max-peak, --max-reserved, --max-leak, --max-graph-memory, "
       "--max-category, --no-oom, "
       "or --baseline DIR --max-growth PERCENT"},
      {{"--no-oom"},
       "no run directory or job root given; usage: gpumemprof check DIR_OR_ROOT LIMITS... (--help says more)"},
      {{"/a", "/b", "--no-oom"}, "one run directory or job root expected, got '/b' too"},
  };
  for (const auto& [args, line] : rows) {
    SCOPED_TRACE(line);
    RunResult r = check(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "gpumemprof check: " + line + "\n");
    EXPECT_EQ(r.out, "");
  }
}

// --help: the whole text, and run's --help lists the same limit options.
TEST(Check, Help) {
  const std::string usage =
      R"(usage: gpumemprof check DIR_OR_ROOT [--max-peak SIZE] [--max-reserved SIZE]
                        [--max-leak SIZE]
                        [--max-graph-memory SIZE] [--max-category NAME=SIZE]
                        [--no-oom] [--baseline DIR --max-growth PERCENT]
  A CI gate: checks memory limits on a run directory, or on every run directory
  of a job root (one per rank or process, as gpumemprof run -o ROOT leaves
  them). Peaks are the driver level's, per device (summary.json's
  allocated_bytes.peak and reserved_bytes.peak); under PyTorch they hold its
  segments, so they bound its tensor-level figures, which are not checked apart.
  Live at exit is summary.json's live_at_exit, per process: tensors still
  allocated and driver allocations outside PyTorch's cache (the report's leaks).
  A process killed before writing summary.json is checked on the figures rebuilt
  from its trace, with a note. Baseline processes are matched by rank when both
  record ranks, else by position. docs/check.md says more.
options:
  --max-peak SIZE          fail when a device's peak allocated memory is over
                           SIZE (40GiB, 512MiB, 1.5G, or a GPU's usable capacity
                           by name: L4, A100-40GB, ...; docs/device-limit.md)
  --max-reserved SIZE      fail when a device's peak reserved memory is over
                           SIZE
  --max-leak SIZE          fail when a process leaves more than SIZE allocated
                           at exit (0: any leak)
  --max-graph-memory SIZE  fail when a device's CUDA graph memory (the graph
                           memory pool's peak and PyTorch's private pools'
                           peaks) is over SIZE
  --max-category NAME=SIZE
                           fail when a device's tensors of category NAME
                           (parameters, gradients, optimizer_state, activations,
                           temporaries, kv_cache, other) peaked over SIZE;
                           repeatable; replays the trace (docs/check.md)
  --no-oom                 fail on any out-of-memory failure, recovered or not,
                           the driver's or PyTorch's
  --baseline DIR           a run directory or a job root to compare with; needs
                           --max-growth
  --max-growth PERCENT     fail when a device's peak allocated memory grew more
                           than PERCENT over the same rank's and device's in the
                           --baseline DIR
Exit status: 0 every limit holds (one line: each limit, the highest figure and
where it was); 1 a limit
broke (one line each: the rank or pid, the device, the figure, the limit); 2 bad
usage or unreadable input.
)";
  RunResult r = check({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, usage);
  const std::string options =
      usage.substr(usage.find("  --max-peak"), usage.find("Exit status") - usage.find("  --max-peak"));
  r = run_tool({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(flat(r.out).find(flat("memory limits, checked on every run directory under ROOT once the command ends "
                                 "(docs/check.md):\n" +
                                 options +
                                 "Exit status: the command's (a command killed by a signal "
                                 "kills gpumemprof with it); when it\nsucceeded, 1 if a limit broke and 2 if the run "
                                 "directories could not be read; 2 for a bad\ncommand line.\n")),
            std::string::npos)
      << r.out;
}

// `gpumemprof run` with limits: the same lines after its summary, on stderr.
std::vector<std::string> run_with_limits(const std::string& root, std::vector<std::string> limits,
                                         std::vector<std::string> ops) {
  std::vector<std::string> a{Paths::tool(), "run", "-o", root};
  a.insert(a.end(), limits.begin(), limits.end());
  a.insert(a.end(), {"--", Paths::bin("prog_ops")});
  a.insert(a.end(), ops.begin(), ops.end());
  return a;
}

// The lines of `err` that start "gpumemprof run: ".
std::string limit_lines(const std::string& err) {
  std::string out;
  size_t at = 0;
  while ((at = err.find("gpumemprof run: ", at)) != std::string::npos) {
    const size_t end = err.find('\n', at);
    out += err.substr(at, end - at + 1);
    at = end;
  }
  return out;
}

TEST(Check, RunExits1WhenTheCommandSucceededButALimitBroke) {
  Sandbox box;
  const std::map<std::string, std::string> env{
      {"LD_PRELOAD", "<unset>"}, {"GPUMEMPROF_OUTPUT", "<unset>"}, {"RANK", "0"}, {"WORLD_SIZE", "1"}};
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_with_limits(root, {"--max-peak", "4M", "--no-oom"}, {"alloc:5M"}), env);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(limit_lines(r.err),
            "gpumemprof run: rank 0, device 0: peak allocated 5.00 MiB, over --max-peak 4.00 MiB\n");

  // The command's own failure wins; the broken limit is still said.
  r = box.run(run_with_limits(box.dir() + "/failed", {"--max-peak=4M"}, {"alloc:5M", "exit:3"}), env);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(limit_lines(r.err),
            "gpumemprof run: rank 0, device 0: peak allocated 5.00 MiB, over --max-peak 4.00 MiB\n");

  r = box.run(run_with_limits(box.dir() + "/within", {"--max-peak", "5M"}, {"alloc:5M"}), env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(limit_lines(r.err), "gpumemprof run: passed on " + box.dir() +
                                    "/within (1 process, 1 per-process device): highest peak allocated 5.00 MiB "
                                    "(rank 0, device 0), --max-peak 5.00 MiB\n");

  // A command that left no run directory: nothing was checked, which is no pass.
  r = box.run(
      {Paths::tool(), "run", "-o", box.dir() + "/none", "--no-oom", "--", Paths::bin("prog_lifecycle"), "no-cuda"},
      env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(limit_lines(r.err), "gpumemprof run: " + box.dir() +
                                    "/none holds no gpumemprof run directory (none with a manifest.json or "
                                    "trace.gmpt, 3 levels down)\n");

  // Growth against the first run; a bad limit is refused before the command runs.
  r = box.run(
      run_with_limits(box.dir() + "/grown", {"--baseline", box.dir() + "/within", "--max-growth", "10"}, {"alloc:6M"}),
      env);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(limit_lines(r.err),
            "gpumemprof run: rank 0, device 0: peak allocated 6.00 MiB against the baseline's "
            "5.00 MiB (+20.00%), over --max-growth 10%\n");
  r = box.run(run_with_limits(box.dir() + "/refused", {"--max-reserved", "lots"}, {"alloc:1M"}), env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpumemprof run: --max-reserved 'lots' is not a size; accepted: a byte count with an optional "
            "unit K, M, G, KiB, MiB or GiB (e.g. 1M, 512KiB)\n");
  r = box.run(run_with_limits(box.dir() + "/refused", {"--baseline", box.dir() + "/nothing", "--max-growth", "1"},
                              {"alloc:1M"}),
              env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof run: baseline: " + box.dir() + "/nothing is not a directory\n");
  EXPECT_FALSE(exists(box.dir() + "/refused"));  // the command never ran: run makes ROOT before it starts
}

}  // namespace
}  // namespace gmp::test
