#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "accounting.h"
#include "run_directory_reader.h"
#include "trace_reader.h"
#include "held_dir.h"
#include "temp_dir.h"
#include "trace_writer.h"

namespace gmp {
namespace {

using test::TempDir;

std::string write_trace(const std::string& dir, int events) {
  const std::string path = dir + "/trace.gmpt";
  const test::HeldDir held(dir);
  TraceWriter w;
  EXPECT_TRUE(w.open(held.dir, make_trace_header(42, 1000, 2000), 0));
  for (int i = 0; i < events; ++i) {
    Event e{};
    e.op = Op::Alloc;
    e.kind = Kind::Linear;
    e.address = 0x1000 + static_cast<uint64_t>(i) * 0x100;
    e.size = 256;
    e.timestamp_ns = 2000 + static_cast<uint64_t>(i);
    w.append(e);
  }
  EXPECT_TRUE(w.flush());
  return path;
}

TEST(Trace, RoundTripsEveryEvent) {
  TempDir d;
  auto path = write_trace(d.path, 50000);  // spans several reader blocks
  reader::TraceReader r;
  ASSERT_TRUE(r.open(path)) << r.error();
  EXPECT_EQ(r.header().pid, 42u);
  EXPECT_EQ(r.header().start_monotonic_ns, 2000u);
  Event e;
  uint64_t n = 0;
  while (r.next(e)) {
    ASSERT_EQ(e.address, 0x1000 + n * 0x100);
    ++n;
  }
  EXPECT_EQ(n, 50000u);
  EXPECT_EQ(r.truncated_bytes(), 0u);
}

TEST(Trace, ATruncatedTailKeepsEveryWholeRecord) {
  TempDir d;
  auto path = write_trace(d.path, 10);
  ASSERT_EQ(truncate(path.c_str(), 64 + 64 * 7 + 30), 0);
  reader::TraceReader r;
  ASSERT_TRUE(r.open(path));
  Event e;
  int n = 0;
  while (r.next(e)) ++n;
  EXPECT_EQ(n, 7);
  EXPECT_EQ(r.truncated_bytes(), 30u);
}

// A corrupt record with a kind outside 0..8 would index the accounting's per-kind tables out of
// bounds (found by tests/fuzz/fuzz_trace_reader): the reader skips and counts it.
TEST(Trace, RecordsOfAnUnknownKindAreSkippedAndCounted) {
  TempDir d;
  const std::string path = d.path + "/trace.gmpt";
  const test::HeldDir held(d.path);
  TraceWriter w;
  ASSERT_TRUE(w.open(held.dir, make_trace_header(42, 1000, 2000), 0));
  for (uint8_t kind : {1, 9, 200, 6, 255}) {
    Event e{};
    e.op = Op::Alloc;
    e.kind = static_cast<Kind>(kind);
    e.address = 0x1000 + kind;
    e.size = 256;
    w.append(e);
  }
  ASSERT_TRUE(w.flush());
  reader::TraceReader r;
  ASSERT_TRUE(r.open(path)) << r.error();
  Accounting acc;
  Event e;
  std::vector<uint64_t> seen;
  while (r.next(e)) {
    seen.push_back(e.address);
    acc.apply(e);
  }
  EXPECT_EQ(seen, (std::vector<uint64_t>{0x1001, 0x1006}));
  EXPECT_EQ(r.events_read(), 2u);
  EXPECT_EQ(r.invalid_events(), 3u);
  EXPECT_EQ(acc.devices().at(0).allocated.current, 256u);
}

TEST(Trace, RejectsForeignShortAndFutureFiles) {
  TempDir d;
  reader::TraceReader missing;
  EXPECT_FALSE(missing.open(d.path + "/nope"));
  EXPECT_EQ(missing.error(), d.path + "/nope does not exist");

  std::ofstream(d.path + "/short") << "GMPT";
  reader::TraceReader shortr;
  EXPECT_FALSE(shortr.open(d.path + "/short"));
  EXPECT_NE(shortr.error().find("truncated"), std::string::npos);

  std::ofstream(d.path + "/foreign") << std::string(200, 'x');
  reader::TraceReader foreign;
  EXPECT_FALSE(foreign.open(d.path + "/foreign"));
  EXPECT_NE(foreign.error().find("not a gpumemprof trace"), std::string::npos);

  auto h = make_trace_header(1, 1, 1);
  h.version = 99;
  std::ofstream(d.path + "/future", std::ios::binary).write(reinterpret_cast<const char*>(&h), sizeof h);
  reader::TraceReader future;
  EXPECT_FALSE(future.open(d.path + "/future"));
  EXPECT_NE(future.error().find("version 99"), std::string::npos);
}

TEST(RunDirectoryReader, RebuildsTheSummaryWhenItIsMissing) {
  TempDir d;
  write_trace(d.path, 3);
  std::string error;
  auto run = reader::open_run_directory(d.path, error);
  ASSERT_TRUE(run.has_value()) << error;
  EXPECT_TRUE(run->summary_rebuilt);
  EXPECT_EQ(run->summary["clean_exit"], false);
  EXPECT_EQ(run->summary["devices"][0]["allocated_bytes"]["current"], 768);
  EXPECT_EQ(run->summary["live_at_exit"]["count"], 3);
}

TEST(RunDirectoryReader, ExplainsWhatIsWrong) {
  TempDir d;
  std::string error;
  EXPECT_FALSE(reader::open_run_directory(d.path + "/missing", error));
  EXPECT_NE(error.find("is not a directory"), std::string::npos);
  EXPECT_FALSE(reader::open_run_directory(d.path, error));
  EXPECT_NE(error.find("not a gpumemprof run directory"), std::string::npos);
  std::ofstream(d.path + "/manifest.json") << "{ broken";
  EXPECT_FALSE(reader::open_run_directory(d.path, error));
  EXPECT_EQ(error.rfind(d.path + "/manifest.json is not valid JSON (parse error at line 1, column 3: ", 0), 0u) << error;
  std::ofstream(d.path + "/manifest.json") << "{}";
  std::ofstream(d.path + "/summary.json") << "[1,2";
  EXPECT_FALSE(reader::open_run_directory(d.path, error));
  EXPECT_EQ(error.rfind(d.path + "/summary.json is not valid JSON (", 0), 0u) << error;
  std::ofstream(d.path + "/summary.json") << "{}";
  EXPECT_FALSE(reader::open_run_directory(d.path, error));
  EXPECT_EQ(error, d.path + ": summary.json has no \"devices\" array and there is no trace.gmpt to rebuild it from");
}

}  // namespace
}  // namespace gmp
