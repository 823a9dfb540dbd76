// GPUMEMPROF_TRACE_MAX through the real shim and collector (docs/trace-format.md §Segments and
// checkpoints): ten million events under a 64 MiB cap keep the trace within it, the summary exact,
// and the kept segments replay, from their checkpoint, to exactly the summary's figures.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"
#include "run_directory_reader.h"
#include "trace_format.h"
#include "trace_reader.h"
#include "summary_builder.h"

namespace gmp::test {
namespace {

uint64_t trace_bytes(const std::string& dir) {
  uint64_t sum = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (trace_segment_of(entry.path().filename().string())) sum += entry.file_size();
  }
  return sum;
}

TEST(TraceCap, TenMillionEventsUnderA64MiBCapKeepTheSummaryExactAndTheWindowReplayable) {
  Sandbox box;
  // 8 threads x 500,000 iterations: 4,000,000 linear + 1,000,000 pool pairs = 10,000,000 events.
  RunResult r = box.run({Paths::bin("prog_stress"), "8", "500000"},
                        {{"GPUMEMPROF_TRACE_MAX", "64M"}, {"GPUMEMPROF_STACKS", "0"}}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto expected = nlohmann::json::parse(r.out);
  const std::string dir = box.only_run_dir();
  const auto s = read_json_file(dir + "/summary.json");
  const auto& d = s["devices"][0];
  EXPECT_EQ(d["alloc_count"], expected["alloc_count"]);
  EXPECT_EQ(d["free_count"], expected["free_count"]);
  EXPECT_EQ(d["allocated_bytes"]["current"], 0);
  EXPECT_EQ(s["events"]["lost"], 0);
  EXPECT_EQ(s["events"]["unwritten"], 0);
  const uint64_t recorded = s["events"]["recorded"];
  EXPECT_GE(recorded, 10'000'000u);
  EXPECT_EQ(s["trace_events_written"], recorded);

  EXPECT_LE(trace_bytes(dir), 64u << 20);
  const auto& t = s["trace"];
  EXPECT_EQ(t["max_bytes"], 64u << 20);
  EXPECT_GT(t["segments_dropped"].get<uint64_t>(), 60u);  // 640 MB of events, 8 MiB segments
  EXPECT_GT(t["kept_from_ns"].get<uint64_t>(), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir + "/trace.gmpt"));

  reader::TraceReader kept;
  ASSERT_TRUE(kept.open(dir)) << kept.error();
  EXPECT_EQ(kept.first_event(), t["events_dropped"].get<uint64_t>());
  EXPECT_EQ(kept.first_event() + kept.records_in_file(), recorded);
  EXPECT_EQ(kept.segments(), t["segments"].get<uint64_t>() - t["segments_dropped"].get<uint64_t>());
  EXPECT_GE(kept.records_in_file(), (64u << 20) / 64 * 7 / 8 - 1024);  // seven full segments at least

  // The kept window alone, from its checkpoint, rebuilds the whole run's summary.
  std::string error;
  auto rebuilt = reader::rebuild_summary(dir, read_json_file(dir + "/manifest.json"), nullptr, error);
  ASSERT_TRUE(rebuilt) << error;
  const auto& rd = (*rebuilt)["devices"][0];
  for (const char* key : {"allocated_bytes", "reserved_bytes", "alloc_count", "free_count", "by_kind",
                          "allocated_peak_at_ns", "reserved_peak_at_ns"}) {
    EXPECT_EQ(rd[key], d[key]) << key;
  }
  EXPECT_EQ((*rebuilt)["events"]["recorded"], recorded);
  EXPECT_EQ((*rebuilt)["live_at_exit"], s["live_at_exit"]);

  // The report covers the kept window and says so; with --since at the same point, the same figures.
  RunResult report = run_tool({"report", dir});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("  window: "), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("  trace: kept from "), std::string::npos) << report.out;
  std::string events = std::to_string(kept.first_event());  // grouped by thousands, as the text prints counts
  for (size_t at = events.size(); at > 3; at -= 3) events.insert(at - 3, ",");
  EXPECT_NE(report.out.find("segments (" + events + " events) were deleted"), std::string::npos) << report.out;
  RunResult early = run_tool({"report", dir, "--since", "1ns"});
  EXPECT_EQ(early.exit_code, 0) << early.err;
  EXPECT_EQ(early.out, report.out);  // the window cannot start before what the trace kept
}

TEST(TraceCap, ABadCapIsRefusedWithOneLineAndTheDefaultUsed) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_stress"), "1", "100"}, {{"GPUMEMPROF_TRACE_MAX", "512K"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "gpumemprof: invalid GPUMEMPROF_TRACE_MAX='512K': expected 0 (unbounded) or a size of at least 1MiB such "
            "as 512M, 1GiB or 20G; using the default 1GiB\n");
  const auto s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_EQ(s["trace"]["max_bytes"], 1u << 30);
  EXPECT_EQ(s["trace"]["segments"], 1);
}

TEST(TraceCap, RunRefusesABadTraceMaxBeforeRunningAnything) {
  RunResult r = run_tool({"run", "--trace-max", "10X", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof run: invalid --trace-max '10X': expected 0 (unbounded) or a size of at least 1MiB "
                   "such as 512M, 1GiB or 20G\n");
}

}  // namespace
}  // namespace gmp::test
