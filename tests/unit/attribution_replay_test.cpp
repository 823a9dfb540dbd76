// Ranges, marks and pauses replayed from synthetic traces, with every figure worked out by hand
// in the comments: nesting and inclusion across two threads, unbalanced pops, ranges left open,
// checkpoint figures, the bound on kept marks, and pause intervals.
#include <gtest/gtest.h>

#include "analysis_json.h"
#include "run_analysis.h"
#include "synthetic_run.h"

namespace gmp::analysis {
namespace {

constexpr uint64_t M = 1ull << 20;

RunAnalysis analyze(const test::SyntheticRun& run, Options options = {}) {
  std::string error;
  auto a = analyze_run(run.dir(), options, error);
  EXPECT_TRUE(a) << error;
  return a ? std::move(*a) : RunAnalysis{};
}

const RangeRow* row(const Regions& r, const std::string& name) {
  for (const RangeRow& row : r.ranges) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

// Thread 1: outer { A 10M, inner { C 20M, free A }, D 1M }. Thread 2 meanwhile: worker { B 5M },
// a stray pop, then worker { E 2M } left open when the trace ends (after C is freed).
TEST(Ranges, NestAcrossThreadsWithExactFigures) {
  test::SyntheticRun run;
  run.name(1, "outer").name(2, "inner").name(3, "worker");
  run.push(100, 1, 1)                  // allocated 0
      .alloc(110, 1, 0xA000, 10 * M)   // 10
      .push(120, 2, 3)                 // worker enters at 10
      .alloc(130, 2, 0xB000, 5 * M)    // 15
      .push(140, 1, 2)                 // inner enters at 15
      .alloc(150, 1, 0xC000, 20 * M)   // 35: the peak
      .free(160, 1, 0xA000)            // 25
      .pop(170, 1)                     // inner exits at 25
      .pop(180, 2)                     // worker exits at 25
      .alloc(190, 1, 0xD000, 1 * M)    // 26
      .pop(200, 1)                     // outer exits at 26
      .pop(210, 2)                     // nothing open on thread 2: ignored
      .push(220, 2, 3)                 // worker enters at 26
      .alloc(230, 2, 0xE000, 2 * M)    // 28
      .free(240, 1, 0xC000);           // 8; the trace ends with worker open
  run.write();
  const RunAnalysis a = analyze(run);
  const Regions& r = a.regions;
  ASSERT_EQ(r.ranges.size(), 3u);
  EXPECT_EQ(r.ranges[0].name, "outer");  // in order of first push
  EXPECT_EQ(r.ranges[1].name, "worker");
  EXPECT_EQ(r.ranges[2].name, "inner");
  EXPECT_EQ(r.unbalanced_pops, 1u);
  EXPECT_EQ(r.open_at_end, 1u);

  const RangeRow* outer = row(r, "outer");
  EXPECT_EQ(outer->calls, 1u);
  EXPECT_EQ(outer->total_ns, 100u);
  EXPECT_EQ(outer->driver.bytes_allocated, 31 * M);  // A, C (inside inner) and D; not thread 2's B
  EXPECT_EQ(outer->driver.allocations, 3u);
  EXPECT_EQ(outer->driver.peak_above_entry, 35 * M);
  EXPECT_EQ(outer->driver.net_change, static_cast<int64_t>(26 * M));
  EXPECT_EQ(outer->open_at_end, 0u);

  const RangeRow* inner = row(r, "inner");
  EXPECT_EQ(inner->calls, 1u);
  EXPECT_EQ(inner->total_ns, 30u);
  EXPECT_EQ(inner->driver.bytes_allocated, 20 * M);
  EXPECT_EQ(inner->driver.peak_above_entry, 20 * M);  // 35 - 15
  EXPECT_EQ(inner->driver.net_change, static_cast<int64_t>(10 * M));

  const RangeRow* worker = row(r, "worker");
  EXPECT_EQ(worker->calls, 2u);
  EXPECT_EQ(worker->total_ns, 60u + 20u);  // the open call ends at the last event (240)
  EXPECT_EQ(worker->max_ns, 60u);
  EXPECT_EQ(worker->driver.bytes_allocated, 7 * M);
  EXPECT_EQ(worker->driver.allocations, 2u);
  EXPECT_EQ(worker->driver.peak_above_entry, 25 * M);  // first call: 35 - 10; the second only 2M
  EXPECT_EQ(worker->driver.net_change, static_cast<int64_t>(15 * M) - static_cast<int64_t>(18 * M));
  EXPECT_EQ(worker->open_at_end, 1u);

  const auto j = analysis_json(a, false);
  EXPECT_EQ(j["ranges"][0]["name"], "outer");
  EXPECT_EQ(j["ranges"][1]["average_ns"], 40);
  EXPECT_EQ(j["ranges"][1]["net_change"], -static_cast<int64_t>(3 * M));
  EXPECT_EQ(j["attribution"]["unbalanced_pops"], 1);
  EXPECT_EQ(j["attribution"]["ranges_open_at_end"], 1);
}

TEST(Ranges, UnknownNamesAreNumbered) {
  test::SyntheticRun run;
  run.push(10, 1, 77).alloc(20, 1, 0x1000, 4096).pop(30, 1);
  run.write();
  const RunAnalysis a = analyze(run);
  ASSERT_EQ(a.regions.ranges.size(), 1u);
  EXPECT_EQ(a.regions.ranges[0].name, "#77");
  EXPECT_EQ(a.regions.ranges[0].driver.bytes_allocated, 4096u);
}

// X 100M; free after Y 50M; Z 300M comes and goes; W 30M.
TEST(Marks, CheckpointFiguresAreExact) {
  test::SyntheticRun run;
  run.name(10, "start").name(11, "a").name(12, "b").name(13, "c");
  run.mark(10, 1, 10)
      .alloc(20, 1, 0x1000, 100 * M)
      .mark(30, 1, 11)
      .alloc(40, 1, 0x2000, 50 * M)
      .free(50, 1, 0x1000)
      .mark(60, 1, 12)
      .alloc(70, 1, 0x3000, 300 * M)
      .free(80, 1, 0x3000)
      .alloc(90, 1, 0x4000, 30 * M)
      .mark(100, 2, 13);
  run.write();
  const RunAnalysis a = analyze(run);
  const Regions& r = a.regions;
  ASSERT_EQ(r.marks.size(), 4u);
  EXPECT_EQ(r.marks_total, 4u);
  struct Want {
    const char* name;
    uint64_t at, allocated, since, so_far;
    int64_t growth;
  };
  const Want want[] = {{"start", 10, 0, 0, 0, 0},
                       {"a", 30, 100 * M, 100 * M, 100 * M, static_cast<int64_t>(100 * M)},
                       {"b", 60, 50 * M, 150 * M, 150 * M, -static_cast<int64_t>(50 * M)},
                       {"c", 100, 80 * M, 350 * M, 350 * M, static_cast<int64_t>(30 * M)}};
  for (size_t i = 0; i < 4; ++i) {
    const MarkRow& m = r.marks[i];
    EXPECT_EQ(m.name, want[i].name);
    EXPECT_EQ(m.index, i + 1);
    EXPECT_EQ(m.at_ns, want[i].at) << m.name;
    EXPECT_EQ(m.driver.allocated, want[i].allocated) << m.name;
    EXPECT_EQ(m.driver.peak_since_previous, want[i].since) << m.name;
    EXPECT_EQ(m.driver.peak_so_far, want[i].so_far) << m.name;
    EXPECT_EQ(m.driver.growth, want[i].growth) << m.name;
  }
  EXPECT_EQ(r.marks[3].thread, 2u);
  ASSERT_TRUE(r.largest_growth);
  EXPECT_EQ(r.largest_growth->name, "a");
  const auto j = analysis_json(a, false);
  EXPECT_EQ(j["marks"][1]["largest_growth"], true);
  EXPECT_EQ(j["marks"][2]["largest_growth"], false);
  EXPECT_EQ(j["marks"][2]["peak_since_previous"], 150 * M);
  EXPECT_EQ(j["attribution"]["largest_growth_mark"]["name"], "a");
}

// Ten marks, growing by i MiB at mark i except a jump of 100M at mark 5: with room for four, the
// first two and last two are kept, the six between counted, and the jump still reported.
TEST(Marks, KeepsTheFirstAndLastAndTheLargestGrowth) {
  test::SyntheticRun run;
  uint64_t t = 10;
  for (uint32_t i = 1; i <= 10; ++i) {
    run.alloc(t++, 1, 0x1000 * i, (i == 5 ? 100 : i) * M);
    run.mark(t++, 1, 0);
  }
  run.write();
  Options o;
  o.max_marks = 4;
  const RunAnalysis a = analyze(run, o);
  const Regions& r = a.regions;
  EXPECT_EQ(r.marks_total, 10u);
  EXPECT_EQ(r.marks_omitted, 6u);
  ASSERT_EQ(r.marks.size(), 4u);
  EXPECT_EQ(r.marks[0].index, 1u);
  EXPECT_EQ(r.marks[1].index, 2u);
  EXPECT_EQ(r.marks[2].index, 9u);
  EXPECT_EQ(r.marks[3].index, 10u);
  EXPECT_EQ(r.marks[0].name, "#0");
  ASSERT_TRUE(r.largest_growth);
  EXPECT_EQ(r.largest_growth->index, 5u);
  EXPECT_EQ(r.largest_growth->driver.growth, static_cast<int64_t>(100 * M));
  EXPECT_EQ(r.marks[3].driver.allocated, (1 + 2 + 3 + 4 + 100 + 6 + 7 + 8 + 9 + 10) * M);
}

TEST(Pauses, IntervalsWithTheFreesRecordedInThem) {
  test::SyntheticRun run;
  run.alloc(10, 1, 0x1000, M)
      .pause(20, 1)
      .free(30, 1, 0x1000)
      .pause(35, 1)  // already paused: no new interval
      .resume(40, 1)
      .resume(45, 1)  // not paused: nothing
      .alloc(48, 1, 0x2000, M)
      .pause(50, 1)
      .free(60, 1, 0x9999);  // never resumed; the trace ends here
  run.write();
  const RunAnalysis a = analyze(run);
  const Regions& r = a.regions;
  ASSERT_EQ(r.pauses.size(), 2u);
  EXPECT_EQ(r.pauses[0].at_ns, 20u);
  EXPECT_EQ(r.pauses[0].resumed_at_ns, 40u);
  EXPECT_TRUE(r.pauses[0].resumed);
  EXPECT_EQ(r.pauses[0].frees, 1u);
  EXPECT_EQ(r.pauses[0].allocations, 0u);
  EXPECT_EQ(r.pauses[1].at_ns, 50u);
  EXPECT_EQ(r.pauses[1].resumed_at_ns, 60u);
  EXPECT_FALSE(r.pauses[1].resumed);
  EXPECT_EQ(r.pauses[1].frees, 1u);
  const auto j = analysis_json(a, false);
  EXPECT_EQ(j["pauses"][0]["duration_ns"], 20);
  EXPECT_TRUE(j["pauses"][1]["resumed_at_ns"].is_null());
}

TEST(Regions, ARunWithoutMarkersHasEmptyTables) {
  test::SyntheticRun run;
  run.alloc(10, 1, 0x1000, M);
  run.write();
  const RunAnalysis a = analyze(run);
  EXPECT_FALSE(a.regions.any());
  EXPECT_FALSE(a.attribution.present);
  const auto j = analysis_json(a, false);
  EXPECT_TRUE(j["ranges"].empty());
  EXPECT_TRUE(j["marks"].empty());
  EXPECT_TRUE(j["pauses"].empty());
  EXPECT_EQ(j["devices"][0]["sites_at_peak"][0]["site"], "(no stack captured)");
  EXPECT_EQ(j["devices"][0]["flame"]["name"], "GPU 0");
}

}  // namespace
}  // namespace gmp::analysis
