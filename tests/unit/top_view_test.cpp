// `gpumemprof top`'s table and detail as text (tools/gpumemprof/top_table.h, top_detail.h): the
// sparkline's levels, columns dropped to fit, the sort, and the detail's lines with call sites and
// notices, on live files written by hand.
#include <gtest/gtest.h>

#include <fstream>

#include "live_files.h"
#include "human_text.h"
#include "temp_dir.h"
#include "top_detail.h"
#include "top_table.h"

namespace gmp::tool::top {
namespace {

using test::LiveRunFile;
using test::TempDir;

constexpr uint64_t kMiB = 1ull << 20;

TEST(TopView, SparklineLevelsAndGaps) {
  const std::vector<std::optional<uint64_t>> v = {0, 1, 2, 3, 4, 5, 6, 7, 8, std::nullopt, 8};
  // Eight levels of max/8 each; the highest takes from 7/8 of max up.
  EXPECT_EQ(sparkline(v, 8, true), "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588\u2588 \u2588");
  EXPECT_EQ(sparkline(v, 8, false), "_.-=+*#@@ @");
  EXPECT_EQ(sparkline({0, std::nullopt}, 0, false), "_ ");
}

TEST(TopView, AgesAndCuts) {
  EXPECT_EQ(age_text(59'999'999'999), "59s");
  EXPECT_EQ(age_text(185'000'000'000), "3m05s");
  EXPECT_EQ(age_text(7'380'000'000'000), "2h03m");
  EXPECT_EQ(age_text(100'800'000'000'000), "1d04h");
  EXPECT_EQ(cut_to_width("h\u00e9llo", 2), "h\u00e9");
  EXPECT_EQ(cut_to_width("\u4e2d\u6587", 3), "\u4e2d");  // a wide character is never halved
}

struct Scan {
  TempDir t;
  reader::LiveScan scan;
  std::vector<std::unique_ptr<LiveRunFile>> files;
  void add(const std::string& name, uint64_t allocated, uint64_t reserved) {
    files.push_back(std::make_unique<LiveRunFile>(t.path + "/" + name));
    LiveRunFile& r = *files.back();
    live::set_text(r.f().program, name);
    live::LiveDevice& d = r.device(0, 0);
    d.allocated = allocated;
    d.reserved = reserved;
    scan.processes.push_back({r.dir(), std::make_shared<live::LiveFile>(r.f()), reader::Liveness::Running, false});
  }
};

TEST(TopView, SortsAndDropsColumnsFromTheRight) {
  Scan s;
  s.add("a.py", 10 * kMiB, 40 * kMiB);
  s.add("b.py", 30 * kMiB, 20 * kMiB);
  std::vector<Row> rows = build_rows(s.scan, test::realtime_ns());
  sort_rows(rows, kAllocated, false);
  EXPECT_EQ(rows[0].cells[kProcess], "b.py");
  sort_rows(rows, kReserved, false);
  EXPECT_EQ(rows[0].cells[kProcess], "a.py");
  sort_rows(rows, kProcess, false);  // names A to Z
  EXPECT_EQ(rows[0].cells[kProcess], "a.py");
  sort_rows(rows, kProcess, true);
  EXPECT_EQ(rows[0].cells[kProcess], "b.py");
  int shown = 0;
  const std::vector<std::string> lines = table_lines(rows, 30, &shown);
  EXPECT_EQ(shown, 4);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].substr(lines[0].find("PROCESS")), "PROCESS  RANK  DEV");
  for (const std::string& l : lines) EXPECT_LE(l.size(), 30u) << l;
  // Narrower than the first column: cut, never wrapped.
  for (const std::string& l : table_lines(rows, 3)) EXPECT_LE(l.size(), 3u) << l;
}

TEST(TopView, DetailNamesCallSitesAndNotices) {
  TempDir t;
  LiveRunFile r(t.path + "/run");
  live::LiveFile& f = r.f();
  live::set_text(f.program, "train.py");
  live::LiveDevice& d = r.device(0, 2);
  d.allocated = 100 * kMiB;
  d.allocated_peak = 150 * kMiB;
  d.reserved = 200 * kMiB;
  d.reserved_peak = 250 * kMiB;
  f.top[0] = {0x1000, 64 * kMiB, 0, 7, 1, 2, 0, 0, live::LiveTop::kTensor, {}};
  f.top[1] = {0x2000, 32 * kMiB, 0, 0, 1, 2, 0, 0, live::LiveTop::kDriver, {}};
  f.notices[0] = {0, 512 * kMiB, 100 * kMiB, 200 * kMiB, 7, 2, live::LiveNotice::kOom, 0};
  f.notices[1] = {0, 128 * kMiB, 100 * kMiB, 200 * kMiB, 0, 2, live::LiveNotice::kCleanup, 0};
  f.notices_total = 2;
  std::ofstream(r.dir() + "/attribution.jsonl")
      << R"({"type":"pyframe","id":3,"file":"/work/train.py","function":"forward","line":42})" "\n"
      << R"({"type":"stack","id":7,"frames":["py:3"]})" "\n";
  const reader::LiveProcess p{r.dir(), std::make_shared<live::LiveFile>(f), reader::Liveness::Running, false};
  SiteLabels sites;
  const std::vector<std::string> lines = detail_lines(p, f.start_realtime_ns, 200, false, sites);
  auto has = [&](const std::string& text) {
    for (const std::string& l : lines) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("device 2  (80.00 GiB total)"));
  EXPECT_TRUE(has("  driver:  allocated 100.00 MiB (peak 150.00 MiB)  reserved 200.00 MiB (peak 250.00 MiB)"));
  EXPECT_TRUE(has("  64.00 MiB    tensor  device 2  forward (train.py:42)"));
  EXPECT_TRUE(has("  32.00 MiB    driver  device 2  (no stack captured)"));
  // Newest first.
  EXPECT_TRUE(has("cleanup on device 2 released 128.00 MiB; allocated 100.00 MiB, reserved 200.00 MiB"));
  EXPECT_TRUE(has("OOM on device 2: 512.00 MiB asked; allocated 100.00 MiB, reserved 200.00 MiB; forward (train.py:42)"));
  EXPECT_EQ(lines.back(), "gpumemprof report " + r.dir());
  for (const std::string& l : lines) EXPECT_LE(l.size(), 200u) << l;
  // Narrow: every line cut to the width.
  for (const std::string& l : detail_lines(p, f.start_realtime_ns, 40, true, sites)) EXPECT_LE(display_width(l), 40u) << l;
}

}  // namespace
}  // namespace gmp::tool::top
