// What the tools refuse to read and how (tools/reader: input_file, json_input, summary_figures,
// the trace reader's corrupt-run check; format/json_fields), on files made here.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "input_file.h"
#include "json_fields.h"
#include "json_input.h"
#include "summary_figures.h"
#include "trace_format.h"
#include "trace_reader.h"
#include "held_dir.h"
#include "temp_dir.h"
#include "trace_writer.h"

namespace gmp::reader {
namespace {

using test::TempDir;

TEST(InputFile, ReadsARegularFileAndSaysWhenOneIsMissing) {
  TempDir d;
  std::ofstream(d.path + "/a.json") << "{\"x\": 1}";
  std::string error;
  EXPECT_EQ(read_input_text(d.path + "/a.json", error), "{\"x\": 1}");
  bool missing = false;
  EXPECT_FALSE(read_input_text(d.path + "/none.json", error, &missing));
  EXPECT_TRUE(missing);
  EXPECT_EQ(error, d.path + "/none.json does not exist");
}

TEST(InputFile, RefusesWhatIsNotARegularFileWithoutBlocking) {
  TempDir d;
  ASSERT_EQ(mkfifo((d.path + "/fifo").c_str(), 0600), 0);  // no writer: a plain open would block
  InputFile fifo;
  EXPECT_FALSE(fifo.open(d.path + "/fifo"));
  EXPECT_FALSE(fifo.missing());
  EXPECT_EQ(fifo.error(), d.path + "/fifo is a FIFO, not a regular file; gpumemprof reads only regular files");
  InputFile dir;
  EXPECT_FALSE(dir.open(d.path));
  EXPECT_EQ(dir.error(), d.path + " is a directory, not a regular file; gpumemprof reads only regular files");
  InputFile device;
  EXPECT_FALSE(device.open("/dev/zero"));
  EXPECT_EQ(device.error(), "/dev/zero is a character device, not a regular file; gpumemprof reads only regular files");
}

TEST(InputFile, RefusesASparseFileUnlessHolesAreAllowed) {
  TempDir d;
  const std::string path = d.path + "/sparse";
  std::ofstream(path) << "data";
  ASSERT_EQ(truncate(path.c_str(), 1ll << 40), 0);  // 1 TiB, all but 4 bytes a hole
  InputFile refused;
  EXPECT_FALSE(refused.open(path));
  EXPECT_EQ(refused.error().rfind(path + " is a sparse file (1099511627776 bytes with a hole at byte ", 0), 0u)
      << refused.error();
  InputFile allowed;
  EXPECT_TRUE(allowed.open(path, Holes::Allow)) << allowed.error();
  EXPECT_EQ(allowed.size(), 1ull << 40);
}

TEST(JsonInput, MeasuresNestingOutsideStrings) {
  EXPECT_EQ(json_depth("{}"), 1u);
  EXPECT_EQ(json_depth(R"({"a": [1, {"b": []}]})"), 4u);
  EXPECT_EQ(json_depth(R"(["[[[[", "\"[[", {}])"), 2u);  // brackets in strings, escaped quotes
  EXPECT_EQ(json_depth(std::string(1000, '['), 10), 11u);  // stops counting past the limit
}

TEST(JsonInput, RefusesDeepNestingAndSaysWhereParsingFailed) {
  std::string problem;
  EXPECT_FALSE(parse_json(std::string(100000, '['), problem));
  EXPECT_EQ(problem, "nests arrays and objects deeper than 64 levels");
  const std::string deepest_allowed = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(parse_json(deepest_allowed, problem));
  EXPECT_FALSE(parse_json("{\"a\": ", problem));
  EXPECT_EQ(problem.rfind("parse error at line 1, column 7: ", 0), 0u) << problem;
}

TEST(JsonInput, ReadsAFileOrSaysWhichFileIsWrong) {
  TempDir d;
  std::string error;
  bool missing = false;
  EXPECT_FALSE(read_json_file(d.path + "/none.json", error, missing));
  EXPECT_TRUE(missing);
  EXPECT_EQ(error, "");
  std::ofstream(d.path + "/deep.json") << std::string(65, '[');
  EXPECT_FALSE(read_json_file(d.path + "/deep.json", error, missing));
  EXPECT_FALSE(missing);
  EXPECT_EQ(error, d.path + "/deep.json is not valid JSON (nests arrays and objects deeper than 64 levels)");
  std::ofstream(d.path + "/ok.json") << "{\"pid\": 7}";
  auto ok = read_json_file(d.path + "/ok.json", error, missing);
  ASSERT_TRUE(ok);
  EXPECT_EQ((*ok)["pid"], 7);
}

TEST(JsonFields, WrongTypesReadAsAbsent) {
  const auto j = nlohmann::json::parse(R"({"exe": null, "pid": -3, "n": 5, "big": 18446744073709551615, "f": 1.5,
                                          "dev": 40000, "s": "x", "o": {"k": [1]}, "b": true})");
  EXPECT_EQ(str_or(member(&j, "exe")), "");
  EXPECT_EQ(str_or(member(&j, "s")), "x");
  EXPECT_EQ(u64_or(member(&j, "pid")), 0u);
  EXPECT_EQ(u64_or(member(&j, "n")), 5u);
  EXPECT_EQ(u64_or(member(&j, "big")), UINT64_MAX);
  EXPECT_EQ(u64_or(member(&j, "f")), 0u);
  EXPECT_EQ(u64_or(member(member(&j, "s"), "deeper")), 0u);
  EXPECT_EQ(as_i64(member(&j, "big")), std::nullopt);
  EXPECT_EQ(as_i64(member(&j, "pid")), -3);
  EXPECT_EQ(as_device(member(&j, "dev")), std::nullopt);
  EXPECT_EQ(as_device(member(&j, "n")), 5);
  EXPECT_EQ(as_bool(member(&j, "b")), true);
  EXPECT_EQ(as_bool(member(&j, "n")), std::nullopt);
  EXPECT_EQ(array_or_empty(member(member(&j, "o"), "k")).size(), 1u);
  EXPECT_EQ(array_or_empty(member(&j, "o")).size(), 0u);
  EXPECT_EQ(member(nullptr, "x"), nullptr);
  const nlohmann::json text = "not an object";
  EXPECT_EQ(member(member(&text, "a"), "b"), nullptr);
}

TEST(SummaryFigures, ReadsADeviceAsTheCollectorWroteIt) {
  const auto d = nlohmann::json::parse(R"({"device": 1, "name": "n", "total_bytes": 1000,
      "allocated_bytes": {"current": 10, "peak": 30}, "reserved_bytes": {"current": 20, "peak": 40},
      "allocated_peak_at_ns": 5, "reserved_peak_at_ns": 6,
      "by_kind": {"linear": {"current": 10, "peak": 25, "allocs": 3, "frees": 2},
                  "pool": {"current": 0, "peak": 5, "allocs": 1, "frees": 1, "reserved": {"current": 7, "peak": 8},
                           "released_by_pool_destroy": 1},
                  "vmm": {"physical": {"current": 0, "peak": 9}}, "array": "junk"},
      "alloc_count": 4, "free_count": 3, "failed_alloc_count": 2})");
  const DeviceStats s = device_figures_from_json(d).stats;
  EXPECT_EQ(s.device, 1);
  EXPECT_EQ(s.total_bytes, 1000u);
  EXPECT_EQ(s.allocated.current, 10u);
  EXPECT_EQ(s.allocated.peak, 30u);
  EXPECT_EQ(s.reserved.peak, 40u);
  EXPECT_EQ(s.allocated_peak_ns, 5u);
  EXPECT_EQ(s.kind(Kind::Linear).bytes.peak, 25u);
  EXPECT_EQ(s.kind(Kind::Linear).allocs, 3u);
  EXPECT_EQ(s.kind(Kind::Pool).frees, 1u);
  EXPECT_EQ(s.kind(Kind::Array).allocs, 0u);
  EXPECT_EQ(s.pool_reserved.peak, 8u);
  EXPECT_EQ(s.released_by_pool_destroy, 1u);
  EXPECT_EQ(s.vmm_physical.peak, 9u);
  EXPECT_EQ(s.alloc_count, 4u);
  EXPECT_EQ(s.failed_alloc_count, 2u);
  EXPECT_EQ(device_figures_from_json(nlohmann::json("x")).stats.device, -1);
}

TEST(SummaryFigures, AWholeTraceNeedsNoWords) {
  const auto s = nlohmann::json::parse(R"({"events": {"recorded": 13, "lost": 0, "producer_waits": 1},
                                          "trace_events_written": 13})");
  const Summary read = summary_from_json(s);
  const EventCounts c = event_counts(&read, 13);
  EXPECT_FALSE(c.trace_incomplete());
  EXPECT_TRUE(event_count_warnings(c).empty());
  EXPECT_EQ(event_counts_line(c), "13 recorded, 0 lost, 0 unwritten, 13 in trace.gmpt, 1 producer waits");
  // Older runs: no unwritten, no trace_events_written.
  const Summary old_summary = summary_from_json(nlohmann::json::parse(R"({"events": {"recorded": 4}})"));
  const EventCounts old = event_counts(&old_summary, 4);
  EXPECT_EQ(old.written, std::nullopt);
  EXPECT_TRUE(event_count_warnings(old).empty());
}

TEST(SummaryFigures, UnwrittenAndTruncatedTracesAreSaidPlainly) {
  const auto s = nlohmann::json::parse(R"({"events": {"recorded": 101000, "lost": 2, "unwritten": 100000,
                                                      "trace_error": "No space left\non device", "producer_waits": 0},
                                          "trace_events_written": 1000})");
  const Summary read = summary_from_json(s);
  const EventCounts c = event_counts(&read, 900);
  EXPECT_TRUE(c.trace_incomplete());
  EXPECT_EQ(c.missing_from_file(), 100u);
  EXPECT_EQ(event_count_warnings(c),
            (std::vector<std::string>{
                "trace incomplete: 100000 of 101000 events were not written to trace.gmpt (No space left on device)",
                "trace truncated: trace.gmpt holds 900 events, 100 fewer than the 1000 summary.json says were written",
                "totals and peaks come from summary.json; what was live at the peaks and at exit, call sites and timelines "
                "from the 900 events in trace.gmpt",
                "2 events were lost: claimed in the ring but never published before the exit wait ran out (a thread "
                "stopped mid-record); no figure includes them"}));
  EXPECT_EQ(event_counts_line(c), "101000 recorded, 2 lost, 100000 unwritten, 900 in trace.gmpt, 0 producer waits");
  const auto j = event_counts_json(c);
  EXPECT_EQ(j["unwritten"], 100000);
  EXPECT_EQ(j["trace_error"], "No space left on device");
  EXPECT_EQ(j["written"], 1000);
  EXPECT_EQ(j["in_trace"], 900);
  EXPECT_EQ(j["missing_from_trace"], 100);
  EXPECT_EQ(j["trace_incomplete"], true);
}

TEST(SummaryFigures, WithoutAFinalFlushLostEventsAreUnknown) {
  const EventCounts c = event_counts(nullptr, 1000);
  EXPECT_FALSE(c.final_flush);
  EXPECT_FALSE(c.trace_incomplete());  // nothing to compare with: said differently
  EXPECT_EQ(event_count_warnings(c),
            (std::vector<std::string>{"the process ended without its final flush (no summary.json): events recorded after "
                                      "the last trace write are missing and their number is unknown; figures are rebuilt "
                                      "from the 1000 events in trace.gmpt"}));
  EXPECT_EQ(event_counts_line(c), "1000 in trace.gmpt; lost and unwritten unknown (no final flush)");
  const auto j = event_counts_json(c);
  EXPECT_EQ(j["final_flush"], false);
  EXPECT_TRUE(j["lost"].is_null());
  EXPECT_TRUE(j["unwritten"].is_null());
  EXPECT_TRUE(j["recorded"].is_null());
  EXPECT_EQ(j["in_trace"], 1000);
}

// Once the oldest segments were deleted there is no trace.gmpt: the words name the kept segments.
TEST(SummaryFigures, ATraceWhoseOldestSegmentsWentIsNamedByTheKeptOnes) {
  const std::string kept = "trace.000003.gmpt to trace.000005.gmpt";
  const EventCounts c = event_counts(nullptr, 1000, kept);
  EXPECT_EQ(event_count_warnings(c),
            (std::vector<std::string>{"the process ended without its final flush (no summary.json): events recorded after "
                                      "the last trace write are missing and their number is unknown; figures are rebuilt "
                                      "from the 1000 events in trace.000003.gmpt to trace.000005.gmpt"}));
  EXPECT_EQ(event_counts_line(c), "1000 in trace.000003.gmpt to trace.000005.gmpt; lost and unwritten unknown (no final "
                                  "flush)");
}

// Zeros where records should be (a file extended by hand, a crashed filesystem): a stretch of
// them stops the reader with an error instead of reading on; a few are skipped and counted.
TEST(TraceReaderCorruption, ALongRunOfZeroRecordsIsAnError) {
  TempDir d;
  const std::string path = d.path + "/trace.gmpt";
  const test::HeldDir held(d.path);
  TraceWriter w;
  ASSERT_TRUE(w.open(held.dir, make_trace_header(42, 1000, 2000), 0));
  Event e{};
  e.op = Op::Alloc;
  e.kind = Kind::Linear;
  e.size = 256;
  e.timestamp_ns = 2001;
  w.append(e);
  ASSERT_TRUE(w.flush());
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    const std::string zeros(64 * 1024, '\0');
    for (uint64_t i = 0; i < TraceReader::kMaxInvalidRun / 1024; ++i) out << zeros;  // 64 MiB, written
  }
  TraceReader r;
  ASSERT_TRUE(r.open(path)) << r.error();
  EXPECT_EQ(r.records_in_file(), 1 + TraceReader::kMaxInvalidRun);
  Event got;
  EXPECT_TRUE(r.next(got));
  EXPECT_EQ(got.size, 256u);
  EXPECT_FALSE(r.next(got));
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.error(), path + " is corrupt: 1048576 records in a row from byte 128 are all zero or of no known kind; "
                              "gpumemprof writes neither");

  ASSERT_EQ(truncate(path.c_str(), 64 + 64 * 4), 0);  // one event and three zero records
  TraceReader few;
  ASSERT_TRUE(few.open(path));
  int n = 0;
  while (few.next(got)) ++n;
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(few.failed());
  EXPECT_EQ(few.invalid_events(), 3u);
}

}  // namespace
}  // namespace gmp::reader
