// Exports at scale (docs/exports.md §Windows, §Resolution; docs/report.md §Windows): --since and
// --until on report, html and export; counter points thinned to --resolution; --min-size; progress
// on stderr. Run directories written by hand (SyntheticRun), so every figure follows from the events.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "accounting.h"
#include "harness.h"
#include "synthetic_run.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20, ms = 1'000'000;

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Device 0: A 100 MiB at 10 ms, B 50 at 20 (150), A freed at 30 (50), C 10 at 40 (60), B freed at
// 50 (10), D 200 at 60 (210), C and D freed at 70.
void write_steps(SyntheticRun& run) {
  run.alloc(10 * ms, 1, 0xA000000, 100 * MiB).alloc(20 * ms, 1, 0xB000000, 50 * MiB).free(30 * ms, 1, 0xA000000);
  run.alloc(40 * ms, 1, 0xC000000, 10 * MiB).free(50 * ms, 1, 0xB000000).alloc(60 * ms, 1, 0xD000000, 200 * MiB);
  run.free(70 * ms, 1, 0xC000000).free(70 * ms, 1, 0xD000000).write();
}

// The peak of device 0's allocated bytes over [since, until], by the accounting alone.
uint64_t direct_window_peak(const std::string& dir, uint64_t since, uint64_t until) {
  reader::TraceReader trace;
  EXPECT_TRUE(trace.open(dir + "/trace.gmpt"));
  Accounting acc;
  Event e;
  bool in = false;
  uint64_t peak = 0;
  while (trace.next(e)) {
    const uint64_t t = e.timestamp_ns - kStartNs;
    if (t > until) break;
    if (!in && t >= since) {
      in = true;
      peak = acc.devices().count(0) ? acc.devices().at(0).allocated.current : 0;
    }
    acc.apply(e);
    if (in) peak = std::max(peak, acc.devices().at(0).allocated.current);
  }
  return peak;
}

TEST(Window, ReportPeaksAreTheWindowsAndEqualADirectReplay) {
  SyntheticRun run;
  write_steps(run);
  RunResult r = run_tool({"report", run.dir(), "--json", "--since", "35ms", "--until=55ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& dev = j["analysis"]["devices"][0];
  EXPECT_EQ(dev["allocated_peak"]["bytes"], 60 * MiB);
  EXPECT_EQ(dev["allocated_peak"]["at_ns"], 40 * ms);
  EXPECT_EQ(dev["allocated_peak"]["bytes"], direct_window_peak(run.dir(), 35 * ms, 55 * ms));
  EXPECT_EQ(j["analysis"]["window"]["since_ns"], 35 * ms);
  EXPECT_EQ(j["analysis"]["window"]["until_ns"], 55 * ms);
  EXPECT_EQ(j["analysis"]["leaks"]["bytes"], 10 * MiB);  // C, live at the window's end
  EXPECT_EQ(j["devices"][0]["allocated_bytes"]["peak"], 210 * MiB);  // summary's: the whole run's

  // A window that starts at a level above everything inside it: the peak is that level, at its start.
  r = run_tool({"report", run.dir(), "--json", "--since", "25ms", "--until", "0.045s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto k = nlohmann::json::parse(r.out);
  EXPECT_EQ(k["analysis"]["devices"][0]["allocated_peak"]["bytes"], 150 * MiB);
  EXPECT_EQ(k["analysis"]["devices"][0]["allocated_peak"]["at_ns"], 25 * ms);
  EXPECT_EQ(direct_window_peak(run.dir(), 25 * ms, 45 * ms), 150 * MiB);

  r = run_tool({"report", run.dir(), "--since", "35ms", "--until", "55ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  window: from 35.0 ms to 55.0 ms since the profiler started"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  allocated  peak 60.00 MiB   at 40.0 ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("alerts (whole run): 0 alerts fired"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at the window's end: live at exit 1 allocation, 10.00 MiB"), std::string::npos) << r.out;

  r = run_tool({"html", run.dir(), "-o", "-", "--since", "35ms", "--until", "55ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("<strong class=\"window\">from 35.0 ms to 55.0 ms</strong>"), std::string::npos);
  EXPECT_NE(r.out.find("Failed allocations (whole run)"), std::string::npos);
  // The timeline starts at the level at --since: 50 MiB until C's allocation at 40 ms.
  const size_t data = r.out.find("<script type=\"application/json\" id=\"gmp-data\">");
  ASSERT_NE(data, std::string::npos);
  const size_t begin = r.out.find('>', data) + 1;
  const auto page = nlohmann::json::parse(r.out.substr(begin, r.out.find("</script>", begin) - begin));
  const auto& timeline = page["analysis"]["devices"][0]["timeline"];
  EXPECT_EQ(timeline["t_ns"][0], 35 * ms);
  EXPECT_EQ(timeline["allocated_max"][0], 50 * MiB);
  EXPECT_EQ(timeline["allocated_last"][0], 50 * MiB);
}

TEST(Window, BadValuesAreRefusedBeforeAnythingIsRead) {
  const std::string form = "a number with a unit ns, us, ms, s, m or h (e.g. 1.5s, 250ms)\n";
  const std::vector<std::pair<std::vector<std::string>, std::string>> rows = {
      {{"report", "/nonexistent", "--since", "1.5x"},
       "gpumemprof report: --since '1.5x' is not a time since the profiler started; accepted: " + form},
      {{"html", "/nonexistent", "-o", "-", "--until=10"},
       "gpumemprof html: --until '10' is not a time since the profiler started; accepted: " + form},
      {{"export", "/nonexistent", "--format", "csv", "--since"},
       "gpumemprof export: --since '' is not a time since the profiler started; accepted: " + form},
      {{"report", "/nonexistent", "--since", "2s", "--until", "1.5s"},
       "gpumemprof report: --since 2s is after --until 1.5s; accepted: --since no later than --until\n"},
      {{"export", "/nonexistent", "--format", "csv", "--resolution", "fast"},
       "gpumemprof export: --resolution 'fast' is not a duration; accepted: 0 (every change) or " + form},
      {{"export", "/nonexistent", "--format", "perfetto", "--min-size", "1X"},
       "gpumemprof export: --min-size '1X' is not a size; accepted: a byte count with an optional unit K, M, G, KiB, "
       "MiB or GiB (e.g. 1M, 512KiB)\n"},
      {{"export", "/nonexistent", "--format", "csv", "--resolution", "1ms"},
       "gpumemprof export: --resolution applies to perfetto and telemetry-v2 only\n"},
  };
  for (const auto& [args, err] : rows) {
    RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(r.err, err);
    EXPECT_EQ(r.out, "");
  }
}

// A window that starts after the run's last event (70 ms) holds nothing: one line, status 2, not a
// peak "at 3600 s". One that starts at the last event is the run's end, and is taken.
TEST(Window, ASinceAfterTheRunsLastEventIsRefused) {
  SyntheticRun run;
  write_steps(run);
  const std::string line = "--since 3600.000 s is after the run's last event at 70.0 ms; accepted: a --since within "
                           "the run\n";
  const std::vector<std::vector<std::string>> commands = {
      {"report", run.dir(), "--since", "1h"},
      {"html", run.dir(), "-o", run.dir() + "/page.html", "--since", "1h"},
      {"export", run.dir(), "--format", "folded", "--since", "1h"}};
  for (const auto& args : commands) {
    RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(r.err, "gpumemprof " + args[0] + ": " + line);
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(run_tool({"report", run.dir(), "--since", "70ms"}).exit_code, 0);
}

TEST(Window, ExportsHoldTheWindowsEventsWithExactFigures) {
  SyntheticRun run;
  write_steps(run);
  RunResult r = run_tool({"export", run.dir(), "--format", "csv", "--since", "30ms", "--until", "50ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream rows(r.out);
  std::string header, line;
  std::getline(rows, header);
  std::vector<std::string> got;
  while (std::getline(rows, line)) got.push_back(line);
  ASSERT_EQ(got.size(), 3u);  // free A at 30, alloc C at 40, free B at 50: allocated 50, 60, 10 MiB
  EXPECT_EQ(got[0].substr(0, 14), "30000000,free,");
  EXPECT_NE(got[0].find(",0," + std::to_string(50 * MiB) + ","), std::string::npos) << got[0];
  EXPECT_NE(got[2].find(",0," + std::to_string(10 * MiB) + ","), std::string::npos) << got[2];

  // perfetto: the memory track starts at the state at --since, then one point per change.
  r = run_tool({"export", run.dir(), "--format", "perfetto", "--since", "35ms", "--until", "55ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(r.out);
  std::vector<std::pair<double, uint64_t>> points;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev["ph"] == "C" && ev["name"] == "GPU 0 memory") points.emplace_back(ev["ts"], ev["args"]["allocated"]);
  }
  const std::vector<std::pair<double, uint64_t>> want = {{35000.0, 50 * MiB}, {40000.0, 60 * MiB}, {50000.0, 10 * MiB}};
  EXPECT_EQ(points, want);
}

// 12000 events: allocations of 1..64 MiB on a moving live set of 8, every 50 us (0.6 s).
struct Churn {
  uint64_t events = 0, large = 0;  // events of allocations of at least 32 MiB
};
Churn write_churn(SyntheticRun& run) {
  Churn c;
  std::vector<std::pair<uint64_t, uint64_t>> live;  // address, size
  uint64_t t = 0;
  for (uint64_t i = 0; c.events < 12000; ++i) {
    const uint64_t size = (i * 7919 % 64 + 1) * MiB, address = 0x100000000 + i * 0x10000000;
    run.alloc(t += 50'000, 1, address, size);
    live.emplace_back(address, size);
    c.events++;
    c.large += size >= 32 * MiB;
    if (live.size() > 8) {
      run.free(t += 50'000, 1, live.front().first);
      c.events++;
      c.large += live.front().second >= 32 * MiB;
      live.erase(live.begin());
    }
  }
  run.write();
  return c;
}

struct Point {
  uint64_t ts_ns, allocated, reserved;
  bool operator==(const Point&) const = default;
};
std::vector<Point> memory_points(const std::string& perfetto) {
  std::vector<Point> out;
  const auto trace = nlohmann::json::parse(perfetto);
  for (const auto& ev : trace["traceEvents"]) {
    if (ev["ph"] != "C" || ev["name"] != "GPU 0 memory") continue;
    out.push_back({static_cast<uint64_t>(ev["ts"].get<double>() * 1000 + 0.5), ev["args"]["allocated"],
                   ev["args"]["reserved"]});
  }
  return out;
}

TEST(Resolution, KeepsEachBucketsFirstLastHighestAndLowest) {
  SyntheticRun run;
  write_churn(run);
  RunResult full = run_tool({"export", run.dir(), "--format", "perfetto", "--resolution", "0"});
  RunResult plain = run_tool({"export", run.dir(), "--format", "perfetto"});
  RunResult thin = run_tool({"export", run.dir(), "--format", "perfetto", "--resolution", "50ms"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  ASSERT_EQ(thin.exit_code, 0) << thin.err;
  EXPECT_EQ(plain.out, full.out);  // 12001 events: under the default's threshold, every change
  const std::vector<Point> all = memory_points(full.out), kept = memory_points(thin.out);
  ASSERT_EQ(all.size(), 12001u);  // the zero at device_info and one per event
  EXPECT_LE(kept.size(), 13u * 6);  // 0.6 s in 50 ms buckets, at most 6 points each
  EXPECT_GE(kept.size(), 13u * 3);
  // Per bucket: the same first and last points, the same highest and lowest of each value.
  auto buckets = [](const std::vector<Point>& points) {
    std::map<uint64_t, std::vector<Point>> out;
    for (const Point& p : points) out[p.ts_ns / (50 * ms)].push_back(p);
    return out;
  };
  const auto a = buckets(all), k = buckets(kept);
  ASSERT_EQ(a.size(), k.size());
  for (const auto& [b, points] : a) {
    const std::vector<Point>& t = k.at(b);
    EXPECT_EQ(t.front(), points.front()) << b;
    EXPECT_EQ(t.back(), points.back()) << b;
    for (auto field : {&Point::allocated, &Point::reserved}) {
      auto cmp = [field](const Point& x, const Point& y) { return x.*field < y.*field; };
      EXPECT_EQ(*std::max_element(t.begin(), t.end(), cmp), *std::max_element(points.begin(), points.end(), cmp));
      EXPECT_EQ(*std::min_element(t.begin(), t.end(), cmp), *std::min_element(points.begin(), points.end(), cmp));
    }
  }
  // The track's peak is the summary's (rebuilt from the trace here).
  RunResult report = run_tool({"report", run.dir(), "--json"});
  const uint64_t peak = nlohmann::json::parse(report.out)["devices"][0]["allocated_bytes"]["peak"];
  uint64_t thin_peak = 0;
  for (const Point& p : kept) thin_peak = std::max(thin_peak, p.allocated);
  EXPECT_EQ(thin_peak, peak);

  // telemetry-v2's allocation records are thinned the same way.
  RunResult tel = run_tool({"export", run.dir(), "--format", "telemetry-v2", "--resolution", "50ms"});
  ASSERT_EQ(tel.exit_code, 0) << tel.err;
  const auto records = nlohmann::json::parse(tel.out);
  uint64_t tel_peak = 0;
  for (const auto& rec : records) tel_peak = std::max<uint64_t>(tel_peak, rec["allocator_allocated_bytes"]);
  EXPECT_EQ(tel_peak, peak);
  EXPECT_LE(records.size(), 13u * 6);
}

TEST(Resolution, MinSizeKeepsLargeAllocationsWhole) {
  SyntheticRun run;
  const Churn c = write_churn(run);
  RunResult csv = run_tool({"export", run.dir(), "--format", "csv", "--min-size", "32MiB"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(count_of(csv.out, "\n"), 1 + 1 + c.large);  // the header, device_info, the large allocations' events
  RunResult perfetto = run_tool({"export", run.dir(), "--format", "perfetto", "--min-size", "32M"});
  ASSERT_EQ(perfetto.exit_code, 0) << perfetto.err;
  EXPECT_EQ(count_of(perfetto.out, "\"cat\":\"allocation\""), c.large);
  EXPECT_EQ(memory_points(perfetto.out).size(), 12001u);  // the counters keep every change
}

TEST(Progress, OnStderrOnlyForLongRuns) {
  SyntheticRun run;
  const Churn c = write_churn(run);
  RunResult quiet = run_tool({"report", run.dir()});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  // Forced: a line at every look at the clock (each 4096 events read), never on stdout.
  Sandbox box;
  const std::map<std::string, std::string> env = {{"LD_PRELOAD", "<unset>"}, {"GPUMEMPROF_PROGRESS_MS", "0"}};
  RunResult forced = box.run({Paths::tool(), "report", run.dir()}, env);
  RunResult exported = box.run({Paths::tool(), "export", run.dir(), "--format", "csv"}, env);
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  const uint64_t records = c.events + 1;
  // report: the summary rebuilt from the trace (no summary.json), then the analysis's two passes.
  EXPECT_EQ(count_of(forced.err, " events read ("), 3 * records / 4096) << forced.err;
  EXPECT_EQ(forced.err.rfind("gpumemprof report: 4096 of 12001 events read (34%), 0 s\n", 0), 0u) << forced.err;
  EXPECT_EQ(count_of(exported.err, " events read ("), 2 * records / 4096) << exported.err;  // rebuild, one pass
  EXPECT_EQ(count_of(forced.out, "events read"), 0u);
  // Each line counts the records of its own pass, and names the pass from the second on.
  EXPECT_EQ(count_of(forced.err, " of 12001 events read ("), 3 * records / 4096) << forced.err;
  // The clock is looked at every 4096 records of all passes: 4096 and 8192 in the first, 12288 to
  // 20480 in the second, 24576 to 32768 in the third.
  EXPECT_EQ(count_of(forced.err, ": pass 2: "), 3u) << forced.err;
  EXPECT_NE(forced.err.find("gpumemprof report: pass 3: 8766 of 12001 events read (73%)"), std::string::npos)
      << forced.err;
}

}  // namespace
}  // namespace gmp::test
