// Threshold alerts on the fake driver (1 GiB devices): each condition fires once and clears once,
// whatever the events in between, and the alert command gets the alert as JSON.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "harness.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;

RunResult ops(const Sandbox& box, std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), Paths::bin("prog_ops"));
  env.emplace("FAKE_CUDA_CAPACITY", "1G");
  env.emplace("GPUMEMPROF_SAMPLE_MS", "1000");  // growth windows of 10 s: out of the way
  return box.run(args, env);
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1) out.push_back(s.substr(start, nl - start));
  return out;
}

// (type, fired) of every alert event in the trace, in order.
std::vector<std::pair<uint64_t, int>> alert_events(const std::string& run) {
  reader::TraceReader t;
  EXPECT_TRUE(t.open(run + "/trace.gmpt")) << t.error();
  std::vector<std::pair<uint64_t, int>> out;
  Event e;
  while (t.next(e)) {
    if (e.op == Op::Alert) out.emplace_back(e.value, e.result);
  }
  return out;
}

// Alert windows of 200 ms (10 x SAMPLE_MS); growth kept out of the way.
const std::map<std::string, std::string> kFastWindows = {{"GPUMEMPROF_SAMPLE_MS", "20"},
                                                         {"GPUMEMPROF_LEAK_BYTES", "100G"}};

// Under GPUMEMPROF_DEVICE_LIMIT the program sees a smaller device, and percentages are of it: a
// 1 GiB limit on a 16 GiB device warns at 50% of the limit, and says so.
TEST(Alerts, PercentagesAreOfTheLimitedDevice) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:700M"},
                        {{"FAKE_CUDA_CAPACITY", "16G"}, {"GPUMEMPROF_DEVICE_LIMIT", "1GiB"},
                         {"GPUMEMPROF_WARN_PERCENT", "50"}, {"GPUMEMPROF_SAMPLE_MS", "1000"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.err), (std::vector<std::string>{
                              "gpumemprof: WARNING device 0: allocated 700.00 MiB is 68.4% of 1.00 GiB (threshold 50.0%)"}))
      << r.err;
  EXPECT_EQ(alert_events(box.only_run_dir()), (std::vector<std::pair<uint64_t, int>>{{1, 1}}));
}

TEST(Alerts, ThresholdsFireOnceAndClearOnce) {
  Sandbox box;
  // 830 MiB crosses 80% (819.2) and fires at once; back to 800 stays inside the 5% band and 830
  // again is no new alert; 980 crosses 95% (972.8). A clear needs its end to last a window: the
  // sleeps provide that, and the next event reports it.
  RunResult r = ops(box,
                    {"alloc:800M", "alloc:30M", "free_last", "alloc:30M", "alloc:150M", "free_last", "sleep:250",
                     "alloc:1K", "free_all", "sleep:250", "alloc:1K"},
                    kFastWindows);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.err), (std::vector<std::string>{
                              "gpumemprof: WARNING device 0: allocated 830.00 MiB is 81.1% of 1.00 GiB (threshold 80.0%)",
                              "gpumemprof: CRITICAL device 0: allocated 980.00 MiB is 95.7% of 1.00 GiB (threshold 95.0%)",
                              "gpumemprof: cleared CRITICAL device 0: allocated 830.00 MiB is 81.1% of 1.00 GiB (threshold 95.0%)",
                              "gpumemprof: cleared WARNING device 0: allocated 0.00 MiB is 0.0% of 1.00 GiB (threshold 80.0%)"}));
  const std::string run = box.only_run_dir();
  EXPECT_EQ(alert_events(run), (std::vector<std::pair<uint64_t, int>>{{1, 1}, {2, 1}, {2, 0}, {1, 0}}));
  auto s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["alerts"], nlohmann::json({{"warning", 1}, {"critical", 1}, {"fragmentation", 0}, {"growth", 0}}));
}

TEST(Alerts, APeakEveryStepIsOneAlertNotAStorm) {
  Sandbox box;
  std::vector<std::string> steps;
  for (int i = 0; i < 10; ++i) {
    steps.push_back("alloc:850M");  // 83%: above the warning threshold for a moment each step
    steps.push_back("free_last");
  }
  steps.push_back("sleep:250");
  steps.push_back("alloc:1K");
  RunResult r = ops(box, steps, kFastWindows);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto l = lines(r.err);
  ASSERT_EQ(l.size(), 2u) << r.err;
  EXPECT_EQ(l[0].find("gpumemprof: WARNING device 0"), 0u);
  EXPECT_EQ(l[1].find("gpumemprof: cleared WARNING device 0"), 0u);
}

TEST(Alerts, CommandGetsTheAlertAsJsonOnStdinAndInTheEnvironment) {
  Sandbox box;
  const std::string script = box.dir() + "/on_alert.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\ncat > \"$1/stdin.json.tmp\"\nprintf '%s' \"$GPUMEMPROF_ALERT_JSON\" > \"$1/env.json\"\n"
         "printf '%s' \"$GPUMEMPROF_ENABLE\" > \"$1/enable.txt\"\nmv \"$1/stdin.json.tmp\" \"$1/stdin.json\"\n";
  }
  chmod(script.c_str(), 0755);
  RunResult r = ops(box, {"alloc:850M", "free_all"}, {{"GPUMEMPROF_ON_ALERT", script + " " + box.dir()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The command runs detached; give it a moment. Fired and cleared fall within one second, so the
  // rate limit lets only the first start.
  for (int i = 0; i < 500 && !exists(box.dir() + "/stdin.json"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto in = read_json_file(box.dir() + "/stdin.json");
  auto env = read_json_file(box.dir() + "/env.json");
  EXPECT_EQ(in, env);
  EXPECT_EQ(in["schema_version"], 1);
  EXPECT_EQ(in["type"], "warning");
  EXPECT_EQ(in["state"], "fired");
  EXPECT_EQ(in["device"], 0);
  EXPECT_EQ(in["device_name"], "Fake CUDA Device 0");
  EXPECT_EQ(in["allocated_bytes"], 850 * MiB);
  EXPECT_EQ(in["total_bytes"], 1ull << 30);
  EXPECT_EQ(in["threshold_percent"], 80.0);
  EXPECT_EQ(in["run_dir"], box.only_run_dir());
  std::ifstream enable(box.dir() + "/enable.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(enable), {}), "0");  // the command is not profiled
}

TEST(Alerts, FragmentationMustLastAWindow) {
  Sandbox box;
  // Five quick alloc/free/sync cycles leave 600 MiB of idle pool memory for moments only: no alert.
  // Then the same memory stays reserved and unused past a window: one alert, cleared a window
  // after the pool shrinks.
  std::vector<std::string> steps;
  for (int i = 0; i < 5; ++i) {
    for (const char* op : {"alloc_async:600M", "free_last", "sync"}) steps.push_back(op);
  }
  for (const char* op : {"alloc_async:600M", "free_last", "sleep:250", "alloc:1K", "sync", "sleep:250", "alloc:1K"}) {
    steps.push_back(op);
  }
  RunResult r = ops(box, steps, kFastWindows);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.err), (std::vector<std::string>{
                              "gpumemprof: FRAGMENTATION device 0: 100.0% of 600.00 MiB reserved is not allocated (threshold 30.0%)",
                              "gpumemprof: cleared FRAGMENTATION device 0: 0.0% of 0.00 MiB reserved is not allocated (threshold 30.0%)"}));
  auto s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_EQ(s["alerts"]["fragmentation"], 1);
}

TEST(Alerts, GrowthNeedsMemoryThatStaysNotAPeak) {
  Sandbox box;
  // Windows of 200 ms (10 x SAMPLE_MS), closed by the first event after their end; a window's
  // floor includes the value it started with. The first window (from the device's first event,
  // at 0 bytes) sets the baseline to 0. The 300 MiB peak comes back inside the next window, whose
  // floor is 10 MiB: no growth. The window that starts at 210 MiB keeps that floor: growth. After
  // free_all the next window's floor is 0: cleared.
  RunResult r = ops(box,
                    {"alloc:10M", "sleep:250", "alloc:300M", "free_last", "sleep:250", "alloc:200M", "sleep:250",
                     "alloc:1M", "free_all", "sleep:250", "alloc:1M"},
                    {{"GPUMEMPROF_SAMPLE_MS", "20"}, {"GPUMEMPROF_LEAK_BYTES", "100M"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto l = lines(r.err);
  ASSERT_EQ(l.size(), 2u) << r.err;
  EXPECT_EQ(l[0].find("gpumemprof: GROWTH device 0: allocated stayed at 210.00 MiB or more, against a baseline of 0.00 MiB"), 0u) << l[0];
  EXPECT_EQ(l[1].find("gpumemprof: cleared GROWTH device 0"), 0u) << l[1];
  auto s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_EQ(s["alerts"]["growth"], 1);
}

}  // namespace
}  // namespace gmp::test
