// Write failures never hurt the program (docs/run-directory.md, "When writing fails"): a disk that
// fills during the run, is full from the start or fills just before exit, RLIMIT_FSIZE, the run
// directory removed under us, our descriptors closed by the program, an OOM bundle on a full disk.
// Each case runs in a private mount namespace on a small tmpfs, so nothing is left mounted if a
// test dies, and what reached the tmpfs is copied out before the namespace ends. For each: exit
// status and stdout are those of the same program run without the profiler, stderr holds exactly
// the expected lines, summary.json (when written) has the figures of the same run on a roomy
// disk, and `gpumemprof report` reads what reached the disk.
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/stat.h>

#include <sstream>

#include "harness.h"

namespace gmp::test {
namespace {

// Why a tmpfs cannot be mounted in a private mount namespace here; "" when it can.
const std::string& mount_refused() {
  static const std::string why = [] {
    Sandbox box;
    const std::string mnt = box.dir() + "/probe";
    mkdir(mnt.c_str(), 0700);
    RunResult r = box.run({"/usr/bin/unshare", "-m", "/bin/sh", "-c", "mount -t tmpfs -o size=64k tmpfs " + mnt},
                          {{"LD_PRELOAD", "<unset>"}}, 30);
    return r.exit_code == 0 ? std::string()
                            : "cannot mount a tmpfs in a private mount namespace (exit " +
                                  std::to_string(r.exit_code) + "): " + r.err;
  }();
  return why;
}

#define SKIP_UNLESS_MOUNTABLE() \
  if (!mount_refused().empty()) GTEST_SKIP() << mount_refused()

struct DiskRun {
  RunResult result;
  std::string copy;  // what the tmpfs held when the program ended
  std::string run_dir() const { return copy + "/run"; }
};

enum class Profiler { On, Off };

// Where the tmpfs is mounted; the run directory is <mount point>/run.
std::string mount_point(const Sandbox& box) { return box.dir() + "/mnt"; }

// `before`: shell commands run just before the program, in its subshell (a `ulimit`, filling the
// disk).
struct Disk {
  const Sandbox& box;
  std::string size;
  std::string before;

  std::string mnt() const { return mount_point(box); }

  DiskRun run(const std::vector<std::string>& argv, std::map<std::string, std::string> env, Profiler profiler,
              const std::string& label) const {
    mkdir(mnt().c_str(), 0700);
    DiskRun d;
    d.copy = box.dir() + "/" + label;
    // Without the profiler, its run directory is made by hand: the program may remove it.
    const std::string made = profiler == Profiler::Off ? "mkdir " + mnt() + "/run; " : "";
    const std::string script = "mount -t tmpfs -o size=" + size + " tmpfs " + mnt() + " || exit 99; " + made + "( " +
                               before + " exec \"$@\" ); rc=$?; mkdir " + d.copy + " && cp -a " + mnt() + "/. " +
                               d.copy + "/ || exit 98; exit $rc";
    std::vector<std::string> args = {"/usr/bin/unshare", "-m", "/bin/sh", "-c", script, "sh"};
    args.insert(args.end(), argv.begin(), argv.end());
    env["GPUMEMPROF_OUTPUT"] = mnt() + "/run";
    env["GPUMEMPROF_SAMPLE_MS"] = "0";  // no samples arriving at odd moments
    if (profiler == Profiler::Off) env["LD_PRELOAD"] = "<unset>";
    d.result = box.run(args, env, 60);
    return d;
  }
};

// The three runs of a case: on the small disk, the same without the profiler, and on a roomy disk
// without the ops that fill, remove or limit (they only change what reaches the disk).
struct Case {
  DiskRun small, bare, roomy;
};

Case run_case(const Sandbox& box, const std::string& size, const std::vector<std::string>& argv,
              const std::map<std::string, std::string>& env = {}, const std::string& before = "") {
  const Disk disk{box, size, before};
  Case c;
  c.small = disk.run(argv, env, Profiler::On, "small");
  c.bare = disk.run(argv, env, Profiler::Off, "bare");
  std::vector<std::string> plain;
  for (const std::string& a : argv) {
    if (a.rfind("fill:", 0) != 0 && a.rfind("remove:", 0) != 0 && a.rfind("fsize_limit:", 0) != 0) plain.push_back(a);
  }
  c.roomy = Disk{box, "64m", ""}.run(plain, env, Profiler::On, "roomy");
  EXPECT_EQ(c.bare.result.exit_code, 0) << c.bare.result.err;
  EXPECT_EQ(c.bare.result.err, "");
  EXPECT_EQ(c.roomy.result.err.find("cannot"), std::string::npos) << c.roomy.result.err;
  return c;
}

// The program's exit status and stdout are those of its run without the profiler.
void expect_unnoticed(const Case& c) {
  EXPECT_EQ(c.small.result.exit_code, c.bare.result.exit_code) << c.small.result.err;
  EXPECT_EQ(c.small.result.term_signal, 0);
  EXPECT_EQ(c.small.result.out, c.bare.result.out);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// What a message says when its copy to gpumemprof.log failed, there and for every later message.
std::string log_note(const std::string& mnt, const std::string& reason) {
  return " [not in " + mnt + "/run/gpumemprof.log: " + reason + "; messages are on stderr only from here on]";
}

// Lines of `err` without the log note: where the disk filled during a trace write, whether the
// log's copy of the line still fits depends on the pages the cut-off trace gave back.
std::vector<std::string> lines_without_log_note(const std::string& err, const std::string& mnt) {
  std::vector<std::string> out = lines_of(err);
  const std::string note = log_note(mnt, "No space left on device");
  for (std::string& line : out) {
    if (line.size() > note.size() && line.compare(line.size() - note.size(), note.size(), note) == 0) {
      line.resize(line.size() - note.size());
    }
  }
  return out;
}

// The line the trace writer says when it stops: its error as summary.json records it, then what
// that means.
::testing::AssertionResult is_trace_line(const std::string& line, const nlohmann::json& summary) {
  if (!summary["events"].contains("trace_error")) return ::testing::AssertionFailure() << "no trace_error";
  const std::string head = "gpumemprof: " + summary["events"]["trace_error"].get<std::string>() + "; ";
  if (line.rfind(head, 0) == 0 && line.find("not traced") != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << line << "' is not the trace's line for '" << head << "'";
}

nlohmann::json summary_of(const DiskRun& d) { return read_json_file(d.run_dir() + "/summary.json"); }

// Every figure of summary.json that does not depend on timing.
nlohmann::json figures(nlohmann::json s) {
  for (auto& d : s["devices"]) {
    for (const char* timing : {"allocated_peak_at_ns", "reserved_peak_at_ns"}) d.erase(timing);
  }
  return {{"devices", s["devices"]},
          {"live_at_exit", s["live_at_exit"]},
          {"host_pinned_bytes", s["host_pinned_bytes"]},
          {"unknown_frees", s["unknown_frees"]},
          {"oom_failures", s["oom"]["failures"]}};
}

// summary.json of the small disk has the roomy run's figures, and accounts for every event.
void expect_exact_summary(const Case& c, bool trace_failed) {
  const nlohmann::json s = summary_of(c.small), roomy = summary_of(c.roomy);
  EXPECT_EQ(figures(s), figures(roomy));
  EXPECT_GT(s["devices"][0]["alloc_count"].get<uint64_t>(), 0u);
  const auto& events = s["events"];
  EXPECT_EQ(s["trace_events_written"].get<uint64_t>() + events["unwritten"].get<uint64_t>(),
            events["recorded"].get<uint64_t>());
  EXPECT_EQ(events["unwritten"].get<uint64_t>() > 0, trace_failed);
  EXPECT_EQ(events.contains("trace_error"), trace_failed);
  EXPECT_FALSE(exists(c.small.run_dir() + "/.reserve"));  // given back for summary.json
}

void expect_readable(const DiskRun& d) {
  RunResult r = run_tool({"report", d.run_dir()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("device 0"), std::string::npos) << r.out;
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") out.push_back(name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The program went unnoticed, stderr holds the trace's line alone (stopped by `reason`), and
// everything else is as on a roomy disk: exact figures, `alloc_count` allocations, a readable run.
void expect_only_the_trace_stopped(const Case& c, const std::vector<std::string>& lines, const std::string& reason,
                                   uint64_t alloc_count) {
  expect_unnoticed(c);
  const nlohmann::json s = summary_of(c.small);
  ASSERT_EQ(lines.size(), 1u) << c.small.result.err;
  EXPECT_TRUE(is_trace_line(lines[0], s));
  EXPECT_NE(s["events"]["trace_error"].get<std::string>().find(": " + reason), std::string::npos);
  expect_exact_summary(c, true);
  EXPECT_EQ(s["devices"][0]["alloc_count"], alloc_count);
  expect_readable(c.small);
}

TEST(WriteFailure, DiskFillingDuringTheTraceStopsOnlyTheTrace) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  const Case c = run_case(box, "256k", {Paths::bin("prog_ops"), "churn:3000"});
  expect_only_the_trace_stopped(c, lines_without_log_note(c.small.result.err, mount_point(box)),
                                "No space left on device", 3000);
}

TEST(WriteFailure, DiskFullFromTheStartTurnsProfilingOffWithOneLine) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  const std::string mnt = mount_point(box);
  const Case c = run_case(box, "256k", {Paths::bin("prog_ops"), "churn:100"}, {},
                          "cat /dev/zero > " + mnt + "/filler 2>/dev/null;");
  expect_unnoticed(c);
  EXPECT_EQ(c.small.result.err, "gpumemprof: cannot write into run directory '" + mnt +
                                    "/run': No space left on device (it was removed); profiling is off for this "
                                    "process\n");
  EXPECT_EQ(entries_of(c.small.copy), std::vector<std::string>{"filler"});
}

TEST(WriteFailure, DiskFullAtExitStillGetsTheSummaryFromTheReserve) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  const std::string mnt = mount_point(box);
  // The disk fills once the events are (most likely) traced; then summary.json remains to be
  // written. On a loaded machine the last trace write may come after the filling, and fail.
  const Case c = run_case(box, "256k", {Paths::bin("prog_ops"), "churn:500", "sleep:100", "fill:" + mnt + "/filler"});
  expect_unnoticed(c);
  const std::vector<std::string> lines = lines_without_log_note(c.small.result.err, mnt);
  ASSERT_LE(lines.size(), 1u) << c.small.result.err;
  if (!lines.empty()) {
    EXPECT_TRUE(is_trace_line(lines[0], summary_of(c.small)));
  }
  expect_exact_summary(c, !lines.empty());
  EXPECT_EQ(summary_of(c.small)["devices"][0]["alloc_count"], 500);
  expect_readable(c.small);
}

TEST(WriteFailure, FileSizeLimitSetByTheProgramStopsOnlyTheTrace) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  // 1,000 events (64 KiB of trace) are written before the program lowers its limit to 16 KiB.
  const Case c =
      run_case(box, "8m", {Paths::bin("prog_ops"), "churn:500", "sleep:100", "fsize_limit:16K", "churn:500"});
  // live.bin (162 KiB) is over the new limit at once: its rewrites stop too, said once.
  std::vector<std::string> lines = lines_of(c.small.result.err);
  const std::string live = "gpumemprof: cannot write " + mount_point(box) +
                           "/run/live.bin: File too large; gpumemprof top shows this process as it was";
  const auto found = std::find(lines.begin(), lines.end(), live);
  ASSERT_NE(found, lines.end()) << c.small.result.err;
  lines.erase(found);
  expect_only_the_trace_stopped(c, lines, "File too large", 1000);
}

TEST(WriteFailure, FileSizeLimitBelowTheReserveNeverRaisesSigxfsz) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  // 32 KiB (dash counts 512-byte blocks): less than the reserve, which takes only that much.
  const Case c = run_case(box, "8m", {Paths::bin("prog_ops"), "churn:1000"}, {}, "ulimit -f 64;");
  std::vector<std::string> lines = lines_of(c.small.result.err);
  // live.bin, allocated whole at the start, is over the limit from the first: said, and skipped.
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "gpumemprof: cannot create " + mount_point(box) + "/run/live.bin: RLIMIT_FSIZE is below its 165920 "
                      "bytes; no live view (gpumemprof top) of this process");
  lines.erase(lines.begin());
  expect_only_the_trace_stopped(c, lines, "File too large", 1000);
}

TEST(WriteFailure, RunDirectoryRemovedWhileRunningIsSaidAndNeverRecreated) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  const std::string mnt = mount_point(box);
  // Without stacks: when attribution.jsonl is first written (before or after the removal) would
  // depend on timing.
  const Case c = run_case(box, "8m",
                          {Paths::bin("prog_ops"), "churn:200", "sleep:100", "remove:" + mnt + "/run", "churn:200"},
                          {{"GPUMEMPROF_STACKS", "0"}});
  expect_unnoticed(c);
  const std::vector<std::string> lines = lines_of(c.small.result.err);
  ASSERT_EQ(lines.size(), 3u) << c.small.result.err;
  // The trace's line and live.bin's, in the order the collector met the loss; the first with the
  // log's note: every file of the directory is gone.
  const std::string gone = ": No such file or directory";
  const std::string note = log_note(mnt, "No such file or directory");
  ASSERT_GT(lines[0].size(), note.size());
  EXPECT_EQ(lines[0].substr(lines[0].size() - note.size()), note);
  int live = 0, trace = 0;
  for (size_t i = 0; i < 2; ++i) {
    const std::string line = i == 0 ? lines[0].substr(0, lines[0].size() - note.size()) : lines[1];
    live += line == "gpumemprof: cannot write " + mnt + "/run/live.bin" + gone +
                        "; gpumemprof top shows this process as it was";
    trace += line.rfind("gpumemprof: cannot write " + mnt + "/run/trace.gmpt" + gone + "; ", 0) == 0;
  }
  EXPECT_EQ(live, 1) << c.small.result.err;
  EXPECT_EQ(trace, 1) << c.small.result.err;
  EXPECT_EQ(lines[2], "gpumemprof: cannot write " + mnt + "/run/summary.json" + gone + "; its figures are not saved");
  EXPECT_EQ(entries_of(c.small.copy), std::vector<std::string>{});
}

TEST(WriteFailure, DescriptorsClosedByTheProgramThenAFullDisk) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  // The program closes every descriptor above 2 and opens its own files on them (they must stay
  // untouched: exit 0); our files are reopened, then the trace fills the disk.
  const Case c = run_case(box, "256k", {Paths::bin("prog_hostile"), "closefrom", box.dir() + "/own.dat", "3000"});
  expect_only_the_trace_stopped(c, lines_without_log_note(c.small.result.err, mount_point(box)),
                                "No space left on device", 3001);
}

const std::map<std::string, std::string> kOomEnv = {{"FAKE_CUDA_CAPACITY", "1G"}, {"GPUMEMPROF_STACKS", "0"}};

TEST(WriteFailure, OomBundleOnAFullDiskIsNeitherLeftHalfWrittenNorSaidTwice) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  const std::string mnt = mount_point(box);
  const Case c = run_case(box, "1m",
                          {Paths::bin("prog_ops"), "alloc:256M", "sleep:100", "fill:" + mnt + "/filler",
                           "expect_fail:2G", "churn:100"},
                          kOomEnv);
  expect_unnoticed(c);
  const nlohmann::json s = summary_of(c.small);
  const std::vector<std::string> lines = lines_of(c.small.result.err);
  ASSERT_EQ(lines.size(), 2u) << c.small.result.err;
  const std::string head = "gpumemprof: out of memory, but the OOM bundle could not be written: cannot write " + mnt +
                           "/run/oom/.tmp.oom_dump_";
  const std::string tail = "/metadata.json: No space left on device" + log_note(mnt, "No space left on device");
  EXPECT_EQ(lines[0].rfind(head, 0), 0u) << lines[0];
  ASSERT_GT(lines[0].size(), tail.size());
  EXPECT_EQ(lines[0].substr(lines[0].size() - tail.size()), tail);
  EXPECT_TRUE(is_trace_line(lines[1], s));
  expect_exact_summary(c, true);
  EXPECT_EQ(s["oom"]["bundles_written"], 0);
  EXPECT_EQ(summary_of(c.roomy)["oom"]["bundles_written"], 1);
  EXPECT_EQ(entries_of(c.small.run_dir() + "/oom"), std::vector<std::string>{});  // no half bundle
  expect_readable(c.small);
  RunResult oom = run_tool({"oom", c.small.run_dir()});
  EXPECT_EQ(oom.exit_code, 0) << oom.err;
  EXPECT_NE(oom.out.find("out-of-memory failures 1, bundles written 0"), std::string::npos) << oom.out;
}

TEST(WriteFailure, OomBundleThatCannotBeUpdatedStaysWhole) {
  SKIP_UNLESS_MOUNTABLE();
  Sandbox box;
  const std::string mnt = mount_point(box);
  // The bundle is written; the disk fills; the retry that fails again cannot update it.
  const Case c = run_case(box, "1m",
                          {Paths::bin("prog_ops"), "alloc:256M", "expect_fail:2G", "sleep:100",
                           "fill:" + mnt + "/filler", "expect_fail:2G", "churn:100"},
                          kOomEnv);
  expect_unnoticed(c);
  const nlohmann::json s = summary_of(c.small);
  const std::vector<std::string> bundles = entries_of(c.small.run_dir() + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  const std::string bundle = mnt + "/run/oom/" + bundles[0];
  const std::vector<std::string> lines = lines_of(c.small.result.err);
  ASSERT_EQ(lines.size(), 3u) << c.small.result.err;
  EXPECT_EQ(lines[0], "gpumemprof: CUDA_ERROR_OUT_OF_MEMORY: cuMemAlloc_v2 of 2.00 GiB (2147483648 bytes) on device "
                      "0; OOM bundle written to " + bundle);
  EXPECT_EQ(lines[1], "gpumemprof: cannot update " + bundle + "/metadata.json: No space left on device; the bundle "
                      "keeps its earlier failure count and recovery state");
  EXPECT_TRUE(is_trace_line(lines[2], s));
  expect_exact_summary(c, true);
  EXPECT_EQ(s["oom"]["failures"], 2);
  EXPECT_EQ(read_json_file(c.small.run_dir() + "/oom/" + bundles[0] + "/metadata.json")["failures"], 1);
  expect_readable(c.small);
  RunResult oom = run_tool({"oom", c.small.run_dir()});
  EXPECT_EQ(oom.exit_code, 0) << oom.err;
  EXPECT_NE(oom.out.find("2.00 GiB"), std::string::npos) << oom.out;
}

}  // namespace
}  // namespace gmp::test
