// `gpumemprof html` on run directories from prog_ops on the fake driver: one self-contained file
// whose embedded JSON holds the exact figures, and escaping of what it inserts. Its command-line
// errors are in hostile_input_test.cpp; the page as a browser renders it is checked by
// tests/html/render_check.py.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "../../tools/gpumemprof/html_escape.h"
#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

// Peak 550 MiB (100 + 200 + 250), then a 2 GiB request that fails on the 1 GiB device.
std::string profile(const Sandbox& box, const std::string& exe = Paths::bin("prog_ops"),
                    std::map<std::string, std::string> env = {}) {
  env["FAKE_CUDA_CAPACITY"] = "1G";
  RunResult r = box.run({exe, "alloc:100M", "alloc:200M", "alloc:250M", "free:1", "expect_fail:2G"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return box.only_run_dir();
}

// The JSON the page embeds for its script.
nlohmann::json embedded(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"gmp-data\">";
  const size_t start = page.find(open);
  if (start == std::string::npos) return nullptr;
  const size_t end = page.find("</script>", start);
  if (end == std::string::npos) return nullptr;
  return nlohmann::json::parse(page.substr(start + open.size(), end - start - open.size()), nullptr, false);
}

// A failed request first (no memory held), 60 ms, then: ranges "load" and, inside it, "step";
// allocated 100, 300 (the peak), 100 and 150 MiB at the end; marks "warm", "loaded" and "end".
// The sleeps keep each step of the memory in a slice of its own however loaded the machine is (the
// page has 2048 slices over the run).
std::string profile_ranges(const Sandbox& box) {
  RunResult r = box.run({Paths::bin("prog_ops"), "expect_fail:2G", "mark:warm", "sleep:60", "push:load", "alloc:100M",
                         "sleep:20", "mark:loaded", "push:step", "alloc:200M", "sleep:20", "free:1", "pop",
                         "alloc:50M", "sleep:20", "pop", "mark:end"},
                        {{"FAKE_CUDA_CAPACITY", "1G"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return box.only_run_dir();
}

// Issue 15, defect 7: the timeline starts at the first allocation, not at the profiler's start (it
// started at 0, 60 ms before it), each slice has its lowest value beside its highest and its last,
// and what was live at each slice's highest point adds up to that point's allocated figure.
TEST(HtmlCommand, TheTimelineSpansTheMemoryAndEachSliceKnowsWhatWasLiveAtItsHighestPoint) {
  Sandbox box;
  const std::string dir = profile_ranges(box);
  const std::string out = box.dir() + "/report.html";
  RunResult r = run_tool({"html", dir, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto data = embedded(slurp(out));
  ASSERT_TRUE(data.is_object());
  const auto& tl = data["analysis"]["devices"][0]["timeline"];
  const auto& ex = data["explore"];
  ASSERT_EQ(ex["allocations"].size(), 3u) << ex["allocations"].dump();
  uint64_t first_alloc = UINT64_MAX;
  for (const auto& a : ex["allocations"]) first_alloc = std::min(first_alloc, a[3].get<uint64_t>());
  EXPECT_GE(first_alloc, 60'000'000u);
  EXPECT_EQ(tl["t_ns"][0], first_alloc);
  EXPECT_EQ(tl["allocated_last"].back(), 150 * MiB);
  EXPECT_EQ(tl["allocated_min"].back(), 150 * MiB);
  EXPECT_EQ(tl["allocated_max"].back(), 150 * MiB);

  const auto& sets = ex["devices"][0];
  ASSERT_EQ(sets["of_bucket"].size(), tl["t_ns"].size());
  std::map<uint64_t, uint64_t> live_count;  // allocated at a slice's highest point -> allocations live then
  uint64_t lowest = UINT64_MAX;
  for (size_t i = 0; i < tl["t_ns"].size(); ++i) {
    const auto& set = sets["sets"][sets["of_bucket"][i].get<size_t>()];
    EXPECT_EQ(set[0], tl["allocated_max"][i]) << "slice " << i;
    live_count[set[0].get<uint64_t>()] = set[1].get<uint64_t>();
    if (i > 0) lowest = std::min(lowest, tl["allocated_min"][i].get<uint64_t>());
  }
  EXPECT_EQ(tl["allocated_min"][0], 0);  // the first slice rose from nothing
  EXPECT_EQ(lowest, 100 * MiB);
  EXPECT_EQ(live_count, (std::map<uint64_t, uint64_t>{{100 * MiB, 1}, {300 * MiB, 2}, {150 * MiB, 2}}));
  // The peak's set: the 200 and the 100 MiB allocations, largest first, both from Runner::alloc.
  for (const auto& set : sets["sets"]) {
    if (set[0] != 300 * MiB) continue;
    ASSERT_EQ(set[5].size(), 2u);
    EXPECT_EQ(ex["allocations"][set[5][0].get<size_t>()][0], 200 * MiB);
    EXPECT_EQ(ex["allocations"][set[5][1].get<size_t>()][0], 100 * MiB);
    ASSERT_EQ(set[3].size(), 3u);  // one stack: id, bytes, count
    EXPECT_EQ(set[3][1], 300 * MiB);
    EXPECT_TRUE(contains(ex["stacks"][std::to_string(set[3][0].get<uint32_t>())]["site"].get<std::string>(),
                         "Runner::alloc("));
  }
}

// Issue 15, defect 8: ranges and marks reach the HTML report (bands, marks) and the perfetto export
// (slices and instants on the thread's track), as they reach `report`.
TEST(HtmlCommand, RangesAndMarksReachTheHtmlReportAndThePerfettoExport) {
  Sandbox box;
  const std::string dir = profile_ranges(box);
  const std::string out = box.dir() + "/report.html";
  ASSERT_EQ(run_tool({"html", dir, "-o", out}).exit_code, 0);
  const auto data = embedded(slurp(out));
  ASSERT_TRUE(data.is_object());
  const auto& ex = data["explore"];
  EXPECT_EQ(ex["range_names"], nlohmann::json({"step", "load"}));  // in the order they closed
  const auto& b = ex["bands"];  // name, thread, depth, from, to, calls, open at end; by start
  ASSERT_EQ(b.size(), 14u) << b.dump();
  EXPECT_EQ(b[0], 1);  // "load" first, at depth 0
  EXPECT_EQ(b[2], 0);
  EXPECT_EQ(b[7], 0);  // then "step", at depth 1, on the same thread, inside it
  EXPECT_EQ(b[9], 1);
  EXPECT_EQ(b[1], b[8]);
  EXPECT_LT(b[3], b[10]);
  EXPECT_GT(b[4], b[11]);
  EXPECT_GE(b[11].get<uint64_t>() - b[10].get<uint64_t>(), 20'000'000u);
  std::vector<std::string> marks;
  for (const auto& m : data["analysis"]["marks"]) marks.push_back(m["name"]);
  EXPECT_EQ(marks, (std::vector<std::string>{"warm", "loaded", "end"}));

  RunResult r = run_tool({"export", dir, "--format", "perfetto", "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(r.out);
  std::vector<std::string> nvtx;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "nvtx") continue;
    EXPECT_EQ(e["tid"], b[1]);
    if (e["ph"] == "X") {
      nvtx.push_back("X " + e["name"].get<std::string>() + " depth " + std::to_string(e["args"]["depth"].get<int>()));
      EXPECT_NEAR(e["dur"].get<double>() * 1000, (e["name"] == "load" ? b[4].get<double>() - b[3].get<double>()
                                                                        : b[11].get<double>() - b[10].get<double>()), 1);
    } else {
      nvtx.push_back(e["ph"].get<std::string>() + " " + e["name"].get<std::string>());
    }
  }
  EXPECT_EQ(nvtx, (std::vector<std::string>{"i warm", "i loaded", "X step depth 1", "X load depth 0", "i end"}));
}

TEST(HtmlCommand, WritesOneSelfContainedPageWithTheExactFigures) {
  Sandbox box;
  const std::string dir = profile(box);
  const std::string out = box.dir() + "/report.html";
  RunResult r = run_tool({"html", dir, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "wrote " + out)) << r.err;
  const std::string page = slurp(out);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(contains(page, "</html>"));

  const auto summary = read_json_file(dir + "/summary.json");
  const auto data = embedded(page);
  ASSERT_TRUE(data.is_object()) << "no parseable #gmp-data";
  EXPECT_EQ(data["schema"], "gpumemprof-html/1");
  const auto& dev = data["analysis"]["devices"][0];
  EXPECT_EQ(dev["allocated_peak"]["bytes"], 550 * MiB);
  EXPECT_EQ(dev["allocated_peak"]["bytes"], summary["devices"][0]["allocated_bytes"]["peak"]);
  EXPECT_EQ(dev["reserved_peak"]["bytes"], summary["devices"][0]["reserved_bytes"]["peak"]);
  EXPECT_EQ(dev["live_at_peak"]["count"], 3);
  EXPECT_EQ(dev["timeline"]["t_ns"].size(), 2048u);
  EXPECT_EQ(dev["timeline"]["allocated_max"].size(), 2048u);
  EXPECT_EQ(data["analysis"]["leaks"]["bytes"], 350 * MiB);  // 100 + 250 never freed
  EXPECT_EQ(data["summary"]["oom"]["bundles_written"], summary["oom"]["bundles_written"]);
  EXPECT_EQ(data["run"]["pid"], read_json_file(dir + "/manifest.json")["pid"]);
  bool failed_marker = false;
  for (const auto& m : data["analysis"]["markers"]) {
    failed_marker |= m["type"] == "alloc_failed" && m["size"] == 2048 * MiB && m["error"] == "CUDA_ERROR_OUT_OF_MEMORY";
  }
  EXPECT_TRUE(failed_marker) << data["analysis"]["markers"].dump();

  // The tables, in human units, and the way to the OOM explanation.
  EXPECT_TRUE(contains(page, "550.00 MiB"));
  EXPECT_TRUE(contains(page, "350.00 MiB"));
  EXPECT_TRUE(contains(page, "cuMemAlloc_v2 of 2.00 GiB failed (CUDA_ERROR_OUT_OF_MEMORY)"));
  EXPECT_TRUE(contains(page, "gpumemprof oom " + dir));

  // The call-site tables name the site (prog_ops allocates in Runner::alloc), as the text report does.
  EXPECT_TRUE(contains(page, "<h4>By call site</h4>"));
  EXPECT_TRUE(std::regex_search(page, std::regex(R"(<td class="site" title="(largest )?stack:? \d+"><code>\(anonymous namespace\)::Runner::alloc\()")))
      << "no symbolised call site in the tables";
  EXPECT_FALSE(contains(page, "<th class=\"num\">stack id</th>"));

  // The flame graph of the peak: a section the script fills from the embedded tree (stacks are on
  // by default), whose root is the device and whose children split all of the peak's bytes.
  EXPECT_TRUE(contains(page, "<section id=\"flame-graph\""));
  EXPECT_TRUE(contains(page, "function renderFlameGraph(data, body)"));
  EXPECT_FALSE(contains(page, "not drawn yet"));
  const auto& flame = dev["flame"];
  EXPECT_EQ(flame["name"], "GPU 0");
  EXPECT_EQ(flame["value"], 550 * MiB);
  ASSERT_FALSE(flame["children"].empty());
  uint64_t below = 0;
  for (const auto& c : flame["children"]) below += c["value"].get<uint64_t>();
  EXPECT_EQ(below, 550 * MiB);

  // Self-contained: no external script, style sheet, image or font.
  EXPECT_FALSE(std::regex_search(page, std::regex(R"(\bsrc\s*=)", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(page, std::regex(R"(<link\b|@import|url\s*\()", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(page, std::regex(R"(\bhref\s*=\s*"(?!#))", std::regex::icase)));
}

// Without stacks the tree is the device and one placeholder frame, and no allocation has a stack id:
// what the script's empty state ("No call stacks were recorded ...") keys on.
TEST(HtmlCommand, FlameDataWithoutStacksIsOnlyThePlaceholder) {
  Sandbox box;
  const std::string dir = profile(box, Paths::bin("prog_ops"), {{"GPUMEMPROF_STACKS", "0"}});
  RunResult r = run_tool({"html", dir, "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "<section id=\"flame-graph\""));
  const auto data = embedded(r.out);
  const auto& dev = data["analysis"]["devices"][0];
  for (const auto& site : dev["live_at_peak"]["by_stack"]) EXPECT_EQ(site["stack_id"], 0) << site.dump();
  for (const auto& site : data["analysis"]["leaks"]["by_stack"]) EXPECT_EQ(site["stack_id"], 0) << site.dump();
  EXPECT_EQ(dev["flame"]["name"], "GPU 0");
  EXPECT_EQ(dev["flame"]["value"], 550 * MiB);
  ASSERT_EQ(dev["flame"]["children"].size(), 1u) << dev["flame"].dump();
  EXPECT_EQ(dev["flame"]["children"][0]["name"], "(no stack captured)");
  EXPECT_EQ(dev["flame"]["children"][0]["value"], 550 * MiB);
}

TEST(HtmlCommand, WritesToStdoutWithDash) {
  Sandbox box;
  const std::string dir = profile(box);
  RunResult r = run_tool({"html", dir, "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(embedded(r.out)["analysis"]["devices"][0]["allocated_peak"]["bytes"], 550 * MiB);
  RunResult eq = run_tool({"html", "--output=-", dir});
  ASSERT_EQ(eq.exit_code, 0) << eq.err;
  EXPECT_EQ(embedded(eq.out)["analysis"], embedded(r.out)["analysis"]);
}

// Issue 15, defects 5 and 10: the page says first how the process ended, titles it by its program and
// calls what a process that died left live by that name, not "leaks".
TEST(HtmlCommand, AnAbortedRunSaysHowItEndedAndHasNoLeaks) {
  Sandbox box;
  RunResult run = box.run({Paths::bin("prog_ops"), "alloc:100M", "alloc:20M", "free:0", "abort"});
  ASSERT_EQ(run.term_signal, SIGABRT) << run.err;
  RunResult r = run_tool({"html", box.only_run_dir(), "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "<h1>GPU memory report <span class=\"exe\">" + Paths::bin("prog_ops") + "</span></h1>\n"
                              "<dl class=\"facts\">\n<dt>Ended</dt><dd>the process was killed by SIGABRT (signal 6)"
                              "</dd>\n")) << r.out.substr(0, 3000);
  EXPECT_TRUE(contains(r.out, "<h2>Live when the process died</h2>")) << r.out.substr(0, 3000);
  EXPECT_TRUE(contains(r.out, "<a href=\"#leaks\">Live when the process died</a>"));
  EXPECT_FALSE(contains(r.out, "Leaks: live at exit"));
}

TEST(HtmlCommand, ReportOfAKilledProcessSaysItWasRebuilt) {
  Sandbox box;
  const std::string dir = profile(box);
  ASSERT_EQ(unlink((dir + "/summary.json").c_str()), 0);
  RunResult r = run_tool({"html", dir, "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "<p class=\"note bad\">the process ended without its final flush (no summary.json): events "
                              "recorded after the last trace write are missing and their number is unknown; figures are "
                              "rebuilt from the "))
      << r.out.substr(0, 4000);
  EXPECT_TRUE(contains(r.out, " in trace.gmpt; lost and unwritten unknown (no final flush)")) << r.out.substr(0, 4000);
  const auto data = embedded(r.out);
  EXPECT_EQ(data["run"]["rebuilt_from_trace"], true);
  EXPECT_TRUE(data["run"]["events_lost"].is_null());
  EXPECT_EQ(data["analysis"]["event_counts"]["final_flush"], false);
  EXPECT_EQ(data["analysis"]["devices"][0]["allocated_peak"]["bytes"], 550 * MiB);
}

TEST(HtmlEscape, TextAndAttributes) {
  EXPECT_EQ(tool::html::escape("</script><b>"), "&lt;/script&gt;&lt;b&gt;");
  EXPECT_EQ(tool::html::escape("a&b \"c\" 'd'"), "a&amp;b &quot;c&quot; &#39;d&#39;");
  EXPECT_EQ(tool::html::escape(std::string("x\x01y", 3)), "x\xEF\xBF\xBDy");
  EXPECT_EQ(tool::html::escape("caf\xC3\xA9\ttab"), "caf\xC3\xA9\ttab");
}

TEST(HtmlEscape, JsonCannotEndTheScriptElement) {
  const nlohmann::json label = {{"label", "</script><b>x</b><!-- & -->"}, {"line", "a\xE2\x80\xA8" "b"}, {"n", 550 * MiB}};
  const std::string text = tool::html::script_json(label);
  EXPECT_EQ(text.find('<'), std::string::npos) << text;
  EXPECT_EQ(text.find('>'), std::string::npos) << text;
  EXPECT_EQ(text.find('&'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xE2\x80\xA8"), std::string::npos) << text;
  EXPECT_TRUE(contains(text, "\\u003c/script\\u003e\\u003cb\\u003e")) << text;
  EXPECT_EQ(nlohmann::json::parse(text), label);  // JSON.parse gives back the same value
  // Invalid UTF-8 does not throw; it becomes U+FFFD.
  EXPECT_EQ(nlohmann::json::parse(tool::html::script_json({{"s", std::string("a\xFF")}}))["s"], "a\xEF\xBF\xBD");
}

TEST(HtmlCommand, AHostileExecutablePathIsEscaped) {
  Sandbox box;
  // A '/' cannot be in a file name, but it can come from a directory named "x<".
  const std::string folder = box.dir() + "/x<";
  ASSERT_EQ(mkdir(folder.c_str(), 0700), 0);
  const std::string exe = folder + "/script><b>&\"'y";
  {
    std::ifstream src(Paths::bin("prog_ops"), std::ios::binary);
    std::ofstream dst(exe, std::ios::binary);
    dst << src.rdbuf();
  }
  ASSERT_EQ(chmod(exe.c_str(), 0700), 0);
  const std::string dir = profile(box, exe);
  RunResult r = run_tool({"html", dir, "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "</script><b>"));
  EXPECT_FALSE(contains(r.out, "<b>"));
  EXPECT_TRUE(contains(r.out, "x&lt;/script&gt;&lt;b&gt;&amp;&quot;&#39;y"));
  EXPECT_EQ(embedded(r.out)["run"]["exe"], exe);
}

}  // namespace
}  // namespace gmp::test
