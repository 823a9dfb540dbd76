// The limits of the CI gate: the options as `check` and `run` take them (tools/gpumemprof/
// check_limits.h), and the verdict on processes whose figures are set by hand
// (tools/analysis/limits_verdict.h).
#include "check_limits.h"

#include <gtest/gtest.h>

#include <initializer_list>

#include "event.h"
#include "limits_verdict.h"

namespace gmp::tool {
namespace {

using analysis::evaluate_limits;
using analysis::Limits;

struct DeviceSpec {
  int device;
  uint64_t peak, reserved;
};

reader::JobMember process(std::optional<uint64_t> rank, uint64_t pid, std::initializer_list<DeviceSpec> devices,
                          uint64_t live_at_exit = 0) {
  reader::JobMember m;
  m.path = "/runs/p" + std::to_string(pid);
  reader::RunDirectory& run = m.run.emplace();
  run.manifest.rank = rank;
  run.manifest.pid = pid;
  for (const DeviceSpec& d : devices) {
    DeviceFigures f;
    f.stats.device = d.device;
    f.stats.allocated.peak = d.peak;
    f.stats.reserved.peak = d.reserved;
    run.figures.devices.push_back(f);
  }
  run.figures.live_at_exit_bytes = live_at_exit;
  run.figures.live_at_exit_count = live_at_exit > 0 ? 1 : 0;
  return m;
}

constexpr uint64_t MiB = 1ull << 20;

// The verdict's lines as the command prints them after its lead: notes, then broken or passed.
std::vector<std::string> lines(const std::vector<reader::JobMember>& runs, const Limits& limits) {
  std::string error;
  const auto v = evaluate_limits(runs, limits, "ROOT", error);
  if (!v) return {"error: " + error};
  std::vector<std::string> out = v->notes;
  out.insert(out.end(), v->broken.begin(), v->broken.end());
  if (v->broken.empty()) out.push_back(v->passed);
  return out;
}

// Parses `args` as `gpumemprof check` does its limit options; false when one was refused.
bool parse(std::vector<std::string> args, Limits& limits) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  for (int i = 0; i < static_cast<int>(argv.size()); ++i) {
    const LimitArg taken = take_limit_arg("check", static_cast<int>(argv.size()), argv.data(), i, limits);
    EXPECT_NE(taken, LimitArg::Other) << argv[i];
    if (taken != LimitArg::Taken) return false;
  }
  return true;
}

TEST(CheckLimits, TakesSizesAsTheEnvironmentDoes) {
  Limits l;
  ASSERT_TRUE(parse({"--max-peak", "40GiB", "--max-reserved=1.5G", "--max-leak", "512MiB", "--no-oom", "--max-growth",
                     "2.5%", "--baseline", "/b"},
                    l));
  EXPECT_EQ(l.max_peak, 40ull << 30);
  EXPECT_EQ(l.max_reserved, 1536 * MiB);
  EXPECT_EQ(l.max_leak, 512 * MiB);
  EXPECT_TRUE(l.no_oom);
  EXPECT_EQ(l.max_growth, 2.5);
  EXPECT_EQ(l.baseline_path, "/b");
  EXPECT_TRUE(l.any());
  EXPECT_FALSE(Limits().any());
  for (const auto& bad : std::vector<std::vector<std::string>>{{"--max-peak", "40 GiB"},
                                                               {"--max-peak", "-1"},
                                                               {"--max-leak", "1.5B"},
                                                               {"--max-reserved"},
                                                               {"--max-growth", "ten"},
                                                               {"--max-growth", "-5"},
                                                               {"--baseline="}}) {
    Limits refused;
    EXPECT_FALSE(parse(bad, refused)) << bad[0];
  }
}

TEST(CheckLimits, PassesWithTheHighestFiguresAndWhereTheyWere) {
  Limits l;
  l.max_peak = 64 * MiB;
  l.max_reserved = 96 * MiB;
  l.max_leak = 0;
  l.no_oom = true;
  const std::vector<reader::JobMember> job{process(0, 10, {{0, 40 * MiB, 48 * MiB}}),
                                           process(1, 11, {{0, 50 * MiB, 64 * MiB}, {1, 8 * MiB, 80 * MiB}})};
  EXPECT_EQ(lines(job, l), std::vector<std::string>{
                               "passed on ROOT (2 processes, 3 per-process devices): highest peak allocated 50.00 MiB "
                               "(rank 1, device 0), --max-peak 64.00 MiB; highest peak reserved 80.00 MiB (rank 1, "
                               "device 1), --max-reserved 96.00 MiB; highest live at exit 0 B (rank 0), --max-leak "
                               "0 B; no out-of-memory failure"});
}

TEST(CheckLimits, OneLinePerBrokenLimitNamingTheProcessTheDeviceTheFigureAndTheLimit) {
  Limits l;
  l.max_peak = 64 * MiB;
  l.max_reserved = 64 * MiB;
  l.max_leak = MiB;
  l.no_oom = true;
  std::vector<reader::JobMember> job{process(0, 10, {{0, 40 * MiB, 48 * MiB}}),
                                     process(std::nullopt, 42, {{0, 70 * MiB, 70 * MiB}, {1, 0, 65 * MiB}}, 2 * MiB)};
  Summary& s = job[1].run->figures;
  s.oom.failures = 2;
  s.failed_allocations.push_back({"cuMemAlloc_v2", "linear", 1, 100 * MiB, kOutOfMemory, 1, 5});
  s.devices[0].stats.framework.ooms = 1;
  EXPECT_EQ(lines(job, l), (std::vector<std::string>{
                               "pid 42, device 0: peak allocated 70.00 MiB, over --max-peak 64.00 MiB",
                               "pid 42, device 0: peak reserved 70.00 MiB, over --max-reserved 64.00 MiB",
                               "pid 42, device 1: peak reserved 65.00 MiB, over --max-reserved 64.00 MiB",
                               "pid 42: live at exit 2.00 MiB, over --max-leak 1.00 MiB (1 allocation, all devices "
                               "together)",
                               "pid 42: 2 out-of-memory failures and 1 out-of-memory error raised by the framework "
                               "(devices 0, 1), and --no-oom allows none",
                           }));
}

TEST(CheckLimits, ExactBytesWhereTheRoundedFiguresReadAlike) {
  Limits l;
  l.max_peak = 64 * MiB;
  EXPECT_EQ(lines({process(3, 1, {{2, 64 * MiB + 1, 0}})}, l),
            std::vector<std::string>{"rank 3, device 2: peak allocated 67108865 B, over --max-peak 67108864 B"});
}

TEST(CheckLimits, GrowthAgainstTheSameRanksDeviceInTheBaseline) {
  Limits l;
  l.max_growth = 10;
  l.baseline_path = "BASE";
  // The baseline lists its ranks in another order: matched by rank, not position.
  l.baseline = {process(1, 21, {{0, 100 * MiB, 0}}), process(0, 20, {{0, 50 * MiB, 0}})};
  const std::vector<reader::JobMember> job{process(0, 10, {{0, 55 * MiB, 0}}),
                                           process(1, 11, {{0, 111 * MiB, 0}, {1, MiB, 0}})};
  EXPECT_EQ(lines(job, l), (std::vector<std::string>{
                               "rank 1, device 0: peak allocated 111.00 MiB against the baseline's 100.00 MiB "
                               "(+11.00%), over --max-growth 10%",
                               "rank 1, device 1: peak allocated 1.00 MiB against the baseline's 0 B (growth from "
                               "nothing), over --max-growth 10%",
                           }));
  l.max_growth = 10.5;
  const std::vector<reader::JobMember> within{process(0, 10, {{0, 55 * MiB, 0}}), process(1, 11, {{0, 90 * MiB, 0}})};
  EXPECT_EQ(lines(within, l), std::vector<std::string>{
                                  "passed on ROOT (2 processes, 2 per-process devices): highest growth +10.00% (rank "
                                  "0, device 0: 55.00 MiB against the baseline's 50.00 MiB), --max-growth 10.5%"});
}

TEST(CheckLimits, ABaselineWithoutRanksIsMatchedByPosition) {
  Limits l;
  l.max_growth = 0;
  l.baseline_path = "BASE";
  l.baseline = {process(std::nullopt, 20, {{0, 50 * MiB, 0}})};
  EXPECT_EQ(lines({process(0, 10, {{0, 50 * MiB, 0}})}, l),
            std::vector<std::string>{"passed on ROOT (1 process, 1 per-process device): highest growth +0.00% (rank "
                                     "0, device 0: 50.00 MiB against the baseline's 50.00 MiB), --max-growth 0%"});
  // A process the baseline lacks is unreadable input (exit 2), not a regression.
  EXPECT_EQ(lines({process(0, 10, {}), process(1, 11, {})}, l),
            std::vector<std::string>{"error: baseline: BASE has no process for rank 1 (matched by rank when both "
                                     "record ranks, else by position; it holds 1 process)"});
  l.baseline = {process(0, 20, {})};
  EXPECT_EQ(lines({process(2, 10, {})}, l),
            std::vector<std::string>{"error: baseline: BASE has no process for rank 2 (matched by rank when both "
                                     "record ranks, else by position; it holds 1 process)"});
}

TEST(CheckLimits, ANoteForFiguresRebuiltFromATrace) {
  Limits l;
  l.max_leak = 4 * MiB;
  std::vector<reader::JobMember> job{process(0, 10, {}, 4 * MiB)};
  job[0].run->summary_rebuilt = true;
  job[0].run->rebuild_reason = "no summary.json";
  job[0].run->events.final_flush = false;
  EXPECT_EQ(lines(job, l), (std::vector<std::string>{
                               "note: rank 0: no summary.json; its figures were rebuilt from the trace, which lacks "
                               "the events recorded after its last write",
                               "passed on ROOT (1 process, 0 per-process devices): highest live at exit 4.00 MiB "
                               "(rank 0), --max-leak 4.00 MiB",
                           }));
  l = Limits();
  l.max_peak = MiB;
  EXPECT_EQ(lines({process(0, 10, {})}, l),
            std::vector<std::string>{"passed on ROOT (1 process, 0 per-process devices): highest peak allocated none "
                                     "(no device), --max-peak 1.00 MiB"});
}

}  // namespace
}  // namespace gmp::tool
