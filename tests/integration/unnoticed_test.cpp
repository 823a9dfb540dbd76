// The program must never notice us (docs/architecture.md, "Staying out of the program's way"):
// its descriptor games never make us write into its files, its wait() never sees our children,
// our files are never inherited, failed trace writes are counted and said once, and a process
// that ends without exit handlers (a fatal signal, _exit, _Exit, quick_exit) still leaves a
// complete summary.json.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include "harness.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;

nlohmann::json summary_of(const std::string& dir) { return read_json_file(dir + "/summary.json"); }

struct TraceCount {
  uint64_t events = 0, allocs = 0;
};

TraceCount count_trace(const std::string& dir) {
  reader::TraceReader t;
  EXPECT_TRUE(t.open(dir + "/trace.gmpt")) << t.error();
  TraceCount c;
  Event e;
  while (t.next(e)) {
    ++c.events;
    if (e.op == Op::Alloc) ++c.allocs;
  }
  EXPECT_EQ(t.truncated_bytes(), 0u);
  return c;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every recorded event is in the trace, and the trace holds nothing else.
void expect_complete_trace(const std::string& dir, uint64_t allocs) {
  auto s = summary_of(dir);
  const TraceCount c = count_trace(dir);
  EXPECT_EQ(c.allocs, allocs);
  EXPECT_EQ(s["devices"][0]["alloc_count"], allocs);
  EXPECT_EQ(s["trace_events_written"], c.events);
  EXPECT_EQ(s["events"]["recorded"], c.events);
  EXPECT_EQ(s["events"]["unwritten"], 0);
  EXPECT_EQ(s["events"]["lost"], 0);
}

TEST(Unnoticed, Dup2OverOurDescriptorsNeverWritesIntoTheProgramsFile) {
  Sandbox box;
  const std::string own = box.dir() + "/own.dat";
  RunResult r = box.run({Paths::bin("prog_hostile"), "dup2", own, "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  expect_complete_trace(box.only_run_dir(), 1001);
}

TEST(Unnoticed, CloseFromThenReuseNeverWritesIntoTheProgramsFiles) {
  Sandbox box;
  const std::string own = box.dir() + "/own.dat";
  RunResult r = box.run({Paths::bin("prog_hostile"), "closefrom", own, "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  expect_complete_trace(box.only_run_dir(), 1001);
}

TEST(Unnoticed, ProgramsWaitSeesOnlyItsOwnChildAndNeverTheAlertCommandsOutput) {
  Sandbox box;
  const std::string script = box.dir() + "/on_alert.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho ALERT-OUTPUT\ncat >/dev/null\nsleep 0.2\n";
  }
  chmod(script.c_str(), 0755);
  RunResult r = box.run({Paths::bin("prog_hostile"), "wait-child", "600"},
                        {{"FAKE_CUDA_CAPACITY", "1G"}, {"GPUMEMPROF_ON_ALERT", script}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("ALERT-OUTPUT"), std::string::npos);
  EXPECT_EQ(r.err.find("ALERT-OUTPUT"), std::string::npos);
  EXPECT_NE(r.err.find("WARNING device 0"), std::string::npos) << r.err;
  const std::string dir = box.only_run_dir();
  EXPECT_EQ(file_text(dir + "/alert_command.log"), "ALERT-OUTPUT\n");
}

TEST(Unnoticed, OurFilesAreNeitherInheritedNorOpenToOthers) {
  Sandbox box;
  const mode_t old = umask(0);
  RunResult r = box.run({Paths::bin("prog_hostile"), "exec-fds"});
  umask(old);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.run_dirs().front();
  EXPECT_EQ(r.out.find(dir), std::string::npos) << r.out;  // the exec'd shell holds none of our files
  for (const char* name : {"gpumemprof.log", "trace.gmpt", "manifest.json", "summary.json", "attribution.jsonl"}) {
    struct stat st {};
    if (stat((dir + "/" + name).c_str(), &st) != 0) continue;  // attribution.jsonl: only with stacks
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
  struct stat log {};
  ASSERT_EQ(stat((dir + "/gpumemprof.log").c_str(), &log), 0);
}

TEST(Unnoticed, ARelativeRunDirectoryStaysPutWhenTheProgramChangesDirectory) {
  Sandbox box;
  const std::string other = box.dir() + "/elsewhere";
  ASSERT_EQ(mkdir(other.c_str(), 0700), 0);
  RunResult r = box.run({Paths::bin("prog_hostile"), "chdir", box.dir(), other}, {{"GPUMEMPROF_OUTPUT", "run.rel.%p"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.only_run_dir();
  EXPECT_EQ(summary_of(dir)["devices"][0]["alloc_count"], 2);
  EXPECT_FALSE(exists(other + "/" + dir.substr(dir.rfind('/') + 1)));
}

TEST(Unnoticed, FailedTraceWritesAreCountedAndSaidOnce) {
  Sandbox box;
  // 64 KiB of file size (dash counts 512-byte blocks): the trace fills after about a thousand of
  // the 5,000 events; the program is not killed by SIGXFSZ.
  RunResult r = box.run({"/bin/sh", "-c", "ulimit -f 128; exec " + Paths::bin("prog_stress") + " 1 2000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.only_run_dir();
  // live.bin, allocated whole at the start, is over the limit from the first: no live view.
  EXPECT_EQ(r.err, "gpumemprof: cannot create " + dir + "/live.bin: RLIMIT_FSIZE is below its 165920 bytes; no live "
                   "view (gpumemprof top) of this process\n"
                   "gpumemprof: cannot write " + dir + "/trace.gmpt: File too large; from here on events are "
                   "counted in summary.json but not traced\n");
  auto s = summary_of(dir);
  const TraceCount c = count_trace(dir);
  EXPECT_EQ(s["devices"][0]["alloc_count"], 2500);
  EXPECT_EQ(s["trace_events_written"], c.events);
  EXPECT_GT(s["events"]["unwritten"].get<uint64_t>(), 0u);
  EXPECT_EQ(s["trace_events_written"].get<uint64_t>() + s["events"]["unwritten"].get<uint64_t>(),
            s["events"]["recorded"].get<uint64_t>());
  EXPECT_EQ(s["events"]["trace_error"], "cannot write " + dir + "/trace.gmpt: File too large");
  struct stat st {};
  ASSERT_EQ(stat((dir + "/trace.gmpt").c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 64 + 64 * c.events);  // whole records only
}

TEST(Unnoticed, FatalSignalWhileThreadsAllocateStillWritesTheSummary) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_hostile"), "threads-signal", "4"}, {}, 30);
  EXPECT_EQ(r.term_signal, SIGTERM) << r.err;
  auto s = summary_of(box.only_run_dir());
  EXPECT_EQ(s["ended_by"], "signal");
  EXPECT_EQ(s["terminated_by_signal"], SIGTERM);
  EXPECT_FALSE(s.contains("exit_status"));
  EXPECT_EQ(s["clean_exit"], false);
  EXPECT_EQ(s["trace_events_written"], count_trace(box.only_run_dir()).events);
}

class ExitCall : public ::testing::TestWithParam<const char*> {};

TEST_P(ExitCall, FlushesEverythingBeforeTheProcessEnds) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_hostile"), GetParam(), "500"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  const std::string dir = box.only_run_dir();
  auto s = summary_of(dir);
  EXPECT_EQ(s["ended_by"], "exit_call");
  EXPECT_EQ(s["exit_status"], 5);
  EXPECT_EQ(s["clean_exit"], true);
  EXPECT_EQ(s["live_at_exit"]["bytes"], MiB);
  expect_complete_trace(dir, 501);
}

INSTANTIATE_TEST_SUITE_P(Unnoticed, ExitCall, ::testing::Values("_exit", "_Exit", "quick_exit"));

}  // namespace
}  // namespace gmp::test
