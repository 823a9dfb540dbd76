// The job view's figures (tools/analysis/job_analysis.h) over processes built in memory: the spread
// of the peaks across ranks and which rank ran out of memory first on the wall clock.
#include "job_analysis.h"

#include <gtest/gtest.h>

#include "event.h"

namespace gmp::analysis {
namespace {

constexpr uint64_t MiB = 1 << 20;

// A rank that started at wall time `start_ns`, with one device per peak (allocated, reserved).
reader::JobMember rank(int r, uint64_t start_ns, std::vector<std::pair<uint64_t, uint64_t>> peaks) {
  reader::JobMember m;
  m.path = "/job/rank" + std::to_string(r);
  m.run.emplace();
  m.run->manifest.rank = r;
  m.run->manifest.pid = 100 + r;
  m.run->manifest.start_realtime_ns = start_ns;
  for (size_t d = 0; d < peaks.size(); ++d) {
    DeviceFigures f;
    f.stats.device = static_cast<int>(d);
    f.stats.allocated.peak = peaks[d].first;
    f.stats.reserved.peak = peaks[d].second;
    m.run->figures.devices.push_back(f);
  }
  return m;
}

void fail(reader::JobMember& m, int64_t error, uint64_t at_ns) {
  m.run->figures.failed_allocations.push_back({"cuMemAlloc_v2", "linear", 0, 64 * 1024 * MiB, error, 1, at_ns});
  if (error == kOutOfMemory) ++m.run->figures.oom.failures;
}

TEST(JobAnalysis, SpreadNamesTheHighestAndLowestRowFirstAmongEquals) {
  std::vector<reader::JobMember> members;
  members.push_back(rank(0, 1000, {{4 * MiB, 6 * MiB}}));
  members.push_back(rank(1, 1000, {{8 * MiB, 8 * MiB}, {2 * MiB, 6 * MiB}}));
  members.push_back(rank(2, 1000, {{8 * MiB, 10 * MiB}}));
  const JobAnalysis job = analyze_job_members("/job", std::move(members));
  ASSERT_EQ(job.rows.size(), 4u);
  ASSERT_EQ(job.spreads.size(), 2u);  // no framework figures: no row has them
  const Spread& allocated = job.spreads[0];
  EXPECT_EQ(allocated.figure, SpreadFigure::AllocatedPeak);
  EXPECT_EQ(allocated.rows, 4u);
  EXPECT_EQ(allocated.highest, 1u);  // rank 1 device 0, before rank 2's equal 8 MiB
  EXPECT_EQ(allocated.lowest, 2u);   // rank 1 device 1
  const Spread& reserved = job.spreads[1];
  EXPECT_EQ(reserved.highest, 3u);
  EXPECT_EQ(reserved.lowest, 0u);  // rank 0, before rank 1 device 1's equal 6 MiB

  const auto j = job_json(job);
  EXPECT_EQ(j["spread"][0]["highest"]["label"], "rank 1");
  EXPECT_EQ(j["spread"][0]["lowest"]["device"], 1);
  EXPECT_EQ(j["spread"][0]["difference_bytes"], 6 * MiB);
  EXPECT_EQ(j["spread"][0]["difference_percent"], 300.0);
  EXPECT_EQ(j["spread"][1]["difference_percent"], 100.0 * 4 / 6);
}

TEST(JobAnalysis, OneRowIsNoSpread) {
  std::vector<reader::JobMember> members;
  members.push_back(rank(0, 1000, {{4 * MiB, 4 * MiB}}));
  members.push_back(rank(1, 1000, {}));  // allocated nothing: a row without a device
  const JobAnalysis job = analyze_job_members("/job", std::move(members));
  ASSERT_EQ(job.rows.size(), 2u);
  EXPECT_EQ(job.rows[1].device, -1);
  EXPECT_TRUE(job.spreads.empty());
}

TEST(JobAnalysis, TheFirstToFailIsTheEarliestOnTheWallClock) {
  std::vector<reader::JobMember> members;
  members.push_back(rank(0, 1'000'000, {{MiB, MiB}}));
  members.push_back(rank(1, 1'000'000, {{MiB, MiB}}));
  members.push_back(rank(2, 5'000'000, {{MiB, MiB}}));
  members.push_back(rank(3, 1'000'000, {{MiB, MiB}}));
  fail(members[0], 1, 100);                  // CUDA_ERROR_INVALID_VALUE first: not out of memory
  fail(members[0], kOutOfMemory, 9'000'000);  // wall 10'000'000
  fail(members[1], kOutOfMemory, 6'000'000);  // wall 7'000'000
  fail(members[2], kOutOfMemory, 1'000'000);  // started 4 ms later: wall 6'000'000, the first
  fail(members[3], 1, 500);                   // never out of memory
  const JobAnalysis job = analyze_job_members("/job", std::move(members));
  EXPECT_EQ(job.start_realtime_ns, 1'000'000u);
  ASSERT_EQ(job.ooms.size(), 3u);
  EXPECT_EQ(job.ooms[0].member, 2u);
  EXPECT_EQ(job.ooms[0].wall_ns, 6'000'000u);
  EXPECT_EQ(job.job_time(2, job.ooms[0].failure.at_ns), 5'000'000u);
  EXPECT_EQ(job.ooms[1].member, 1u);
  EXPECT_EQ(job.ooms[2].member, 0u);
  EXPECT_EQ(job.ooms[2].failure.at_ns, 9'000'000u);  // its first out-of-memory failure, not its first failure

  const auto j = job_json(job);
  EXPECT_EQ(j["failed_first"]["label"], "rank 2");
  EXPECT_EQ(j["failed_first"]["job_ns"], 5'000'000);
  ASSERT_EQ(j["failed_first"]["later"].size(), 2u);
  EXPECT_EQ(j["failed_first"]["later"][0]["label"], "rank 1");
  EXPECT_EQ(j["failed_first"]["later"][0]["after_ns"], 1'000'000);
  EXPECT_EQ(j["failed_first"]["later"][1]["after_ns"], 4'000'000);
  EXPECT_EQ(j["processes"][3]["oom"]["first"], nullptr);
}

TEST(JobAnalysis, AFailureWithoutAStartTimeIsNotPlaced) {
  std::vector<reader::JobMember> members;
  members.push_back(rank(0, 0, {{MiB, MiB}}));  // no manifest start time
  fail(members[0], kOutOfMemory, 100);
  reader::JobMember unread{"/job/broken", std::nullopt, "/job/broken: not a run directory"};
  members.push_back(unread);
  const JobAnalysis job = analyze_job_members("/job", std::move(members));
  EXPECT_EQ(job.opened, 1u);
  EXPECT_TRUE(job.ooms.empty());
  EXPECT_EQ(job_json(job)["processes"][1]["error"], "/job/broken: not a run directory");
}

}  // namespace
}  // namespace gmp::analysis
