// `gpumemprof report` and `gpumemprof diff` on run directories from prog_ops: the peak breakdown,
// leaks and failures with exact figures, a golden text report, a SIGKILLed run and an incomplete trace.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1ull << 20;

// 100M and 200M linear, 50M from the default pool, free the 100M, 300M linear (the peak: 550 MiB
// live in three allocations), a 2 GiB request the 1 GiB device refuses, then all freed but 10M.
const std::vector<std::string> kOps = {"alloc:100M", "alloc:200M", "alloc_async:50M", "free:0", "alloc:300M",
                                       "expect_fail:2G", "sync", "free_all", "alloc:10M"};

std::string ops_run(Sandbox& box, std::vector<std::string> ops = kOps, std::map<std::string, std::string> env = {}) {
  ops.insert(ops.begin(), Paths::bin("prog_ops"));
  env.emplace("FAKE_CUDA_CAPACITY", "1G");
  RunResult r = box.run(ops, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return box.only_run_dir();
}

nlohmann::json report_json(const std::string& dir) {
  RunResult r = run_tool({"report", dir, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Report, PeakBreakdownLeaksAndFailures) {
  Sandbox box;
  const std::string dir = ops_run(box);
  auto j = report_json(dir);
  const auto& d = j["analysis"]["devices"][0];
  EXPECT_EQ(d["allocated_peak"]["bytes"], 550 * MiB);
  EXPECT_EQ(d["allocated_peak"]["by_kind"]["linear"], 500 * MiB);
  EXPECT_EQ(d["allocated_peak"]["by_kind"]["pool"], 50 * MiB);
  EXPECT_EQ(d["reserved_peak"]["bytes"], 550 * MiB);
  const auto& live = d["live_at_peak"];
  EXPECT_EQ(live["count"], 3);
  EXPECT_EQ(live["bytes"], 550 * MiB);
  EXPECT_EQ(live["by_kind"]["linear"]["count"], 2);
  EXPECT_EQ(live["by_kind"]["pool"]["bytes"], 50 * MiB);
  ASSERT_EQ(live["largest"].size(), 3u);
  EXPECT_EQ(live["largest"][0]["size"], 300 * MiB);
  EXPECT_EQ(live["largest"][1]["size"], 200 * MiB);
  EXPECT_EQ(live["largest"][2]["kind"], "pool");
  const auto& leaks = j["analysis"]["leaks"];
  EXPECT_EQ(leaks["count"], 1);
  EXPECT_EQ(leaks["bytes"], 10 * MiB);
  EXPECT_EQ(leaks["largest"][0]["api"], "cuMemAlloc_v2");
  std::vector<std::string> markers;
  for (const auto& m : j["analysis"]["markers"]) markers.push_back(m["type"]);
  EXPECT_EQ(markers, (std::vector<std::string>{"alloc_failed", "oom_bundle"}));
  EXPECT_EQ(j["analysis"]["markers"][0]["size"], 2048 * MiB);
  EXPECT_EQ(j["analysis"]["markers"][0]["error"], "CUDA_ERROR_OUT_OF_MEMORY");
  // The peak is after the 300M allocation and before the failed request.
  EXPECT_LE(d["allocated_peak"]["at_ns"].get<uint64_t>(), j["analysis"]["markers"][0]["at_ns"].get<uint64_t>());
}

// A loop's equal buffers from one line read alike in the "largest" list: one row with their count.
TEST(Report, IdenticalLargestRowsAreOneRowWithTheirCount) {
  Sandbox box;
  const std::string dir = ops_run(box, {"alloc:3M", "alloc:3M", "alloc:3M", "alloc:1M"}, {{"GPUMEMPROF_STACKS", "0"}});
  RunResult r = run_tool({"report", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex rows(R"(\n    largest:\n      3\.00 MiB ×3 linear +cuMemAlloc_v2 +at [0-9.]+ [mµ]?s +thread \d+\n)"
                        R"(      1\.00 MiB    linear +cuMemAlloc_v2 )");
  EXPECT_TRUE(std::regex_search(r.out, rows)) << r.out;
  EXPECT_EQ(report_json(dir)["analysis"]["devices"][0]["live_at_peak"]["largest"].size(), 4u) << "--json keeps each";
}

// The whole text report, with what changes from run to run (paths, pid, times, thread ids) masked.
// Without stacks: call sites name source lines of this machine's C library (attribution_test.cpp
// covers them).
TEST(Report, GoldenText) {
  Sandbox box;
  const std::string dir = ops_run(box, kOps, {{"GPUMEMPROF_STACKS", "0"}});
  RunResult r = run_tool({"report", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string text = r.out;
  text = std::regex_replace(text, std::regex(std::regex_replace(dir, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)")), "RUN");
  text = std::regex_replace(text, std::regex(R"(process \S+ \(pid \d+\), [0-9.]+ m?s)"), "process EXE (pid PID), DURATION");
  text = std::regex_replace(text, std::regex(R"(at [0-9.]+ (m|\xc2\xb5)?s +)"), "at TIME ");
  text = std::regex_replace(text, std::regex(R"(thread \d+)"), "thread TID");
  text = std::regex_replace(text, std::regex(R"(stack \d+)"), "stack ID");
  const std::string golden_path = std::string(GMP_SOURCE_DIR) + "/tests/integration/golden/report_prog_ops.txt";
  if (getenv("GMP_UPDATE_GOLDEN")) std::ofstream(golden_path) << text;
  EXPECT_EQ(text, read_file(golden_path)) << "regenerate with GMP_UPDATE_GOLDEN=1 after checking the new output";
}

TEST(Report, KilledRunIsRebuiltFromTheTraceWithItsPeak) {
  Sandbox box;
  int out = -1;
  pid_t pid = box.spawn({Paths::bin("prog_ops"), "alloc:100M", "alloc:200M", "free:0", "print:ready", "sleep:30000"},
                        {}, &out);
  ASSERT_EQ(read_line(out, 30000), "ready");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the collector's idle flush
  // Still running: said so, not "died" (its pid is alive and started before its profiler did).
  RunResult running = run_tool({"report", box.only_run_dir()});
  EXPECT_EQ(running.out.find("gpumemprof report: " + box.only_run_dir() + "\n  the process is still running: these "
                             "are the figures of its trace so far\n"),
            0u)
      << running.out;
  EXPECT_NE(running.out.find("\nlive so far: 1 allocation, 200.00 MiB\n"), std::string::npos) << running.out;
  kill(pid, SIGKILL);
  RunResult killed = wait_for(pid, out, -1, 30);
  close(out);
  ASSERT_EQ(killed.term_signal, SIGKILL);
  const std::string dir = box.only_run_dir();
  auto j = report_json(dir);
  EXPECT_EQ(j["rebuilt_from_trace"], true);
  EXPECT_EQ(j["analysis"]["devices"][0]["allocated_peak"]["bytes"], 300 * MiB);
  EXPECT_EQ(j["analysis"]["leaks"]["bytes"], 200 * MiB);
  // No final flush: what was lost or never written is unknown, not 0.
  const uint64_t in_trace = j["analysis"]["events"];
  EXPECT_EQ(j["analysis"]["event_counts"]["final_flush"], false);
  EXPECT_EQ(j["analysis"]["event_counts"]["in_trace"], in_trace);
  EXPECT_TRUE(j["analysis"]["event_counts"]["lost"].is_null());
  EXPECT_TRUE(j["analysis"]["event_counts"]["unwritten"].is_null());
  EXPECT_TRUE(j["events"]["lost"].is_null());
  // How it ended comes first, and what it left is not called leaks (issue 15, defect 5).
  EXPECT_EQ(j["analysis"]["process_end"],
            nlohmann::json({{"ended_by", "unknown"}, {"signal", nullptr}, {"exit_status", nullptr}, {"died", true},
                            {"text", "the process died without writing summary.json (killed by SIGKILL, or a crash)"}}));
  RunResult text = run_tool({"report", dir});
  EXPECT_EQ(text.out.find("gpumemprof report: " + dir + "\n  the process died without writing summary.json (killed by "
                          "SIGKILL, or a crash)\n"),
            0u)
      << text.out;
  EXPECT_NE(text.out.find("\nlive when the process died: 1 allocation, 200.00 MiB\n"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("leaks"), std::string::npos) << text.out;
  const std::string n = std::to_string(in_trace);
  EXPECT_NE(text.out.find("  note: the process ended without its final flush (no summary.json): events recorded after the "
                          "last trace write are missing and their number is unknown; figures are rebuilt from the " +
                          n + " events in trace.gmpt\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("events: " + n + " in trace.gmpt; lost and unwritten unknown (no final flush)\n"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find(" lost,"), std::string::npos) << text.out;
}

// A process that aborts: summary.json names the signal, and the report says so first; its memory
// still live is what it held when it died, not leaks (issue 15, defect 5).
TEST(Report, AnAbortedRunSaysHowItEndedFirst) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:100M", "alloc:20M", "free:0", "abort"});
  ASSERT_EQ(r.term_signal, SIGABRT) << r.err;
  const std::string dir = box.only_run_dir();
  auto j = report_json(dir);
  EXPECT_EQ(j["rebuilt_from_trace"], false);
  EXPECT_EQ(j["analysis"]["process_end"],
            nlohmann::json({{"ended_by", "signal"}, {"signal", SIGABRT}, {"exit_status", nullptr}, {"died", true},
                            {"text", "the process was killed by SIGABRT (signal 6)"}}));
  RunResult text = run_tool({"report", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find("gpumemprof report: " + dir + "\n  the process was killed by SIGABRT (signal 6)\n"), 0u)
      << text.out;
  EXPECT_NE(text.out.find("\nlive when the process died: 1 allocation, 20.00 MiB\n"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("leaks"), std::string::npos) << text.out;
}

// The columns a line takes on a terminal: one per code point, two for CJK ideographs.
size_t columns(const std::string& line) {
  size_t n = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const auto b = static_cast<unsigned char>(line[i]);
    if ((b & 0xC0) == 0x80) continue;
    ++n;
    if (b == 0xE4 || (b > 0xE4 && b < 0xEA)) ++n;  // U+4E00-U+9FFF
  }
  return n;
}

// Not a terminal and no COLUMNS: every line of the demo's report fits 80 columns, stacks and their
// C++ names included (issue 15, defect 11).
TEST(Report, TheDemosReportFitsEightyColumnsWhenNotATerminal) {
  ScopedColumns not_set(nullptr);
  Sandbox box;
  const std::string tool = Paths::tool();
  RunResult r = box.run({tool.substr(0, tool.rfind('/')) + "/gpumemprof-demo"}, {{"FAKE_CUDA_CAPACITY", "1G"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.only_run_dir();
  // Paths are never cut (they are pasted into commands): the lines of the run directory's and the
  // program's are left out.
  auto expect_width = [&dir, &tool](const std::string& out, size_t width) {
    std::istringstream lines(out);
    size_t n = 0;
    for (std::string line; std::getline(lines, line); ++n) {
      const bool path = line.find(dir) != std::string::npos || line.find(tool.substr(0, tool.rfind('/'))) != std::string::npos;
      if (path) continue;
      EXPECT_LE(columns(line), width) << line;
    }
    EXPECT_GT(n, 40u) << out;
  };
  RunResult text = run_tool({"report", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  expect_width(text.out, 80);
}

// What the collector leaves when a trace write fails (ENOSPC) after the first events: summary.json
// counts all 13 events, trace.gmpt holds the first 3 (the device and the 100M and 200M allocations).
// Totals come from the summary, what was live when from the trace, and every output says so with
// the same counts. Then a trace cut short after the run: fewer records than trace_events_written.
TEST(Report, AnIncompleteTraceIsSaidPlainlyEverywhere) {
  Sandbox box;
  const std::string dir = ops_run(box);
  nlohmann::json s = read_json_file(dir + "/summary.json");
  ASSERT_EQ(s["events"]["recorded"], 13);
  s["events"]["unwritten"] = 10;
  s["events"]["trace_error"] = "No space left on device";
  s["trace_events_written"] = 3;
  std::ofstream(dir + "/summary.json", std::ios::trunc) << s.dump(2);
  std::filesystem::resize_file(dir + "/trace.gmpt", 64 + 3 * 64);
  const std::string incomplete = "trace incomplete: 10 of 13 events were not written to trace.gmpt (No space left on device)";
  const std::string sources = "totals and peaks come from summary.json; what was live at the peaks and at exit, call sites "
                              "and timelines from the 3 events in trace.gmpt";

  RunResult text = run_tool({"report", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  note: " + incomplete + "\n  note: " + sources + "\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  allocated  peak 550.00 MiB"), std::string::npos) << text.out;  // the trace's is 300 MiB
  EXPECT_NE(text.out.find("  allocations 5, frees 4, failed allocations 1\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  live at the allocated peak: 2 allocations, 300.00 MiB\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("events: 13 recorded, 0 lost, 10 unwritten, 3 in trace.gmpt, 0 producer waits\n"), std::string::npos)
      << text.out;

  auto j = report_json(dir);
  const auto& c = j["analysis"]["event_counts"];
  EXPECT_EQ(c["recorded"], 13);
  EXPECT_EQ(c["lost"], 0);
  EXPECT_EQ(c["unwritten"], 10);
  EXPECT_EQ(c["in_trace"], 3);
  EXPECT_EQ(c["written"], 3);
  EXPECT_EQ(c["trace_incomplete"], true);
  EXPECT_EQ(c["warnings"], nlohmann::json::array({incomplete, sources}));
  EXPECT_EQ(j["analysis"]["devices"][0]["allocated_peak"]["bytes"], 550 * MiB);
  EXPECT_EQ(j["analysis"]["devices"][0]["live_at_peak"]["bytes"], 300 * MiB);

  RunResult html = run_tool({"html", dir, "-o", "-"});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_NE(html.out.find("<p class=\"note bad\">" + incomplete + "</p>"), std::string::npos);
  EXPECT_NE(html.out.find("13 recorded, 0 lost, 10 unwritten, 3 in trace.gmpt, 0 producer waits"), std::string::npos);

  s["events"].erase("unwritten");
  s["events"].erase("trace_error");
  s["trace_events_written"] = 13;
  std::ofstream(dir + "/summary.json", std::ios::trunc) << s.dump(2);
  text = run_tool({"report", dir});
  EXPECT_NE(text.out.find("  note: trace truncated: trace.gmpt holds 3 events, 10 fewer than the 13 summary.json says were "
                          "written\n  note: " + sources + "\n"),
            std::string::npos)
      << text.out;
}

TEST(Report, TruncatedTraceIsReadUpToItsLastWholeEvent) {
  Sandbox box;
  const std::string dir = ops_run(box);
  std::filesystem::remove(dir + "/summary.json");
  const auto size = std::filesystem::file_size(dir + "/trace.gmpt");
  std::filesystem::resize_file(dir + "/trace.gmpt", size - 64 - 17);  // the last event and part of another
  RunResult r = run_tool({"report", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("partial record"), std::string::npos) << r.out;
  auto j = report_json(dir);
  EXPECT_EQ(j["analysis"]["trace_truncated_bytes"], 64 - 17);
  EXPECT_EQ(j["analysis"]["devices"][0]["allocated_peak"]["bytes"], 550 * MiB);
}

TEST(Diff, ChangesBetweenTwoRuns) {
  Sandbox a_box, b_box;
  const std::string a = ops_run(a_box);
  const std::string b = ops_run(b_box, {"alloc:100M", "alloc:250M", "alloc_async:50M", "free:0", "alloc:300M", "sync"});
  RunResult r = run_tool({"diff", a, b, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& f = j["devices"][0]["figures"];
  EXPECT_EQ(f["allocated_peak"]["a"], 550 * MiB);
  EXPECT_EQ(f["allocated_peak"]["b"], 600 * MiB);
  EXPECT_EQ(f["allocated_peak"]["change"], 50 * MiB);
  EXPECT_EQ(f["failed_allocations"]["change"], -1);
  EXPECT_EQ(j["devices"][0]["live_at_peak_by_kind"][0]["kind"], "linear");
  EXPECT_EQ(j["devices"][0]["live_at_peak_by_kind"][0]["change"], 50 * MiB);
  EXPECT_EQ(j["process"]["leaked_bytes_at_exit"]["b"], 600 * MiB);
  EXPECT_EQ(j["process"]["OOM_failures"]["a"], 1);
  RunResult text = run_tool({"diff", a, b});
  EXPECT_NE(text.out.find("allocated peak         550.00 MiB     600.00 MiB     +50.00 MiB (+9.1%)"), std::string::npos)
      << text.out;
  RunResult same = run_tool({"diff", a, a, "--json"});
  auto s = nlohmann::json::parse(same.out);
  for (const auto& [name, row] : s["devices"][0]["figures"].items()) EXPECT_EQ(row["change"], 0) << name;
  // In 80 columns a call site goes under its figures, shortened in the middle; only the lines of
  // the two paths are longer.
  ScopedColumns eighty("80");
  RunResult narrow = run_tool({"diff", a, b});
  std::istringstream lines(narrow.out);
  size_t sites = 0;
  for (std::string line, before; std::getline(lines, line); before = line) {
    if (line.find(a) == std::string::npos && line.find(b) == std::string::npos) {
      EXPECT_LE(columns(line), 80u) << line;
    }
    if (line.starts_with("      ") && line.find("prog_ops.cpp:") != std::string::npos) {
      ++sites;
      EXPECT_TRUE(before.starts_with("    ") && before.find("B ") != std::string::npos) << before;  // its figures
    }
  }
  EXPECT_GT(sites, 0u) << narrow.out;
}

// --fail-if-peak-grows is check's --max-growth with A as the baseline: exit 1 past it, 0 within,
// 2 for a bad value; two different programs are compared with a warning.
TEST(Diff, FailsWhenThePeakGrowsAndWarnsOnDifferentPrograms) {
  Sandbox a_box, b_box, other_box;
  const std::string a = ops_run(a_box);
  const std::string b = ops_run(b_box, {"alloc:100M", "alloc:250M", "alloc_async:50M", "free:0", "alloc:300M", "sync"});
  const std::string pid = std::to_string(read_json_file(b + "/manifest.json")["pid"].get<int>());
  const std::string figures = "600.00 MiB against the baseline's 550.00 MiB";
  RunResult r = run_tool({"diff", a, b, "--fail-if-peak-grows", "5"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out.ends_with("\ngpumemprof diff: pid " + pid + ", device 0: peak allocated " + figures +
                              " (+9.09%), over --fail-if-peak-grows 5%\n")) << r.out;
  r = run_tool({"diff", a, b, "--fail-if-peak-grows=10%"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.ends_with("\ngpumemprof diff: passed on " + b + " (1 process, 1 per-process device): highest "
                              "growth +9.09% (pid " + pid + ", device 0: " + figures + "), --fail-if-peak-grows 10%\n"))
      << r.out;
  r = run_tool({"diff", a, b, "--json", "--fail-if-peak-grows", "5"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["limits"]["broken"][0],
            "pid " + pid + ", device 0: peak allocated " + figures + " (+9.09%), over --fail-if-peak-grows 5%");
  r = run_tool({"diff", a, b, "--fail-if-peak-grows", "ten"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof diff: --fail-if-peak-grows 'ten' is not a percentage; accepted: a number, decimals "
                   "allowed, an optional % (10, 2.5%)\n");
  EXPECT_EQ(r.out, "");

  ASSERT_EQ(other_box.run({Paths::bin("prog_linked")}).exit_code, 0);
  r = run_tool({"diff", a, other_box.only_run_dir()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpumemprof diff: warning: A and B are runs of different programs (A: " + Paths::bin("prog_ops") +
                       "; B: " + Paths::bin("prog_linked") + ")\n");
}

}  // namespace
}  // namespace gmp::test
