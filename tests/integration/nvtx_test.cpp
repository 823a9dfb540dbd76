// The shim as an NVTX injection library (docs/attribution.md, "NVTX"): prog_nvtx's NVTX ranges and
// marks become range_push/range_pop/mark events, allocations fall inside the right ranges, another
// NVTX tool chained through GPUMEMPROF_NVTX_CHAIN sees every call too, and NVTX alone never
// creates a run directory.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1ull << 20;

// What one run recorded, per thread: "push:NAME", "pop", "mark:NAME" in trace order; and for
// every allocation (by size in MiB) the innermost range its thread had open ("" for none).
struct Recorded {
  std::map<uint32_t, std::vector<std::string>> by_thread;
  std::map<uint64_t, std::string> alloc_range;
  std::map<uint64_t, uint32_t> alloc_thread;
  std::vector<Api> range_apis;  // api of every mark, push and pop, in trace order
  size_t allocs = 0;
};

std::map<uint64_t, std::string> read_names(const std::string& run_dir) {
  std::map<uint64_t, std::string> names;
  std::ifstream in(run_dir + "/attribution.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("type", "") != "name") continue;
    names[j["id"].get<uint64_t>()] = j["name"].get<std::string>();
  }
  return names;
}

Recorded read_run(const std::string& run_dir) {
  Recorded r;
  const auto names = read_names(run_dir);
  reader::TraceReader trace;
  EXPECT_TRUE(trace.open(run_dir + "/trace.gmpt")) << trace.error();
  std::map<uint32_t, std::vector<std::string>> open;  // per thread, outermost first
  auto name_of = [&](uint64_t id) {
    auto it = names.find(id);
    EXPECT_NE(it, names.end()) << "name id " << id << " has no name record";
    return it != names.end() ? it->second : "?";
  };
  Event e;
  while (trace.next(e)) {
    switch (e.op) {
      case Op::RangePush:
        r.by_thread[e.thread_id].push_back("push:" + name_of(e.address));
        open[e.thread_id].push_back(name_of(e.address));
        r.range_apis.push_back(e.api);
        break;
      case Op::RangePop:
        r.by_thread[e.thread_id].push_back("pop");
        if (!open[e.thread_id].empty()) open[e.thread_id].pop_back();
        r.range_apis.push_back(e.api);
        break;
      case Op::Mark:
        r.by_thread[e.thread_id].push_back("mark:" + name_of(e.address));
        r.range_apis.push_back(e.api);
        break;
      case Op::Alloc: {
        ++r.allocs;
        const auto& stack = open[e.thread_id];
        r.alloc_range[e.size / MiB] = stack.empty() ? "" : stack.back();
        r.alloc_thread[e.size / MiB] = e.thread_id;
        break;
      }
      default: break;
    }
  }
  return r;
}

std::vector<int> ints(const nlohmann::json& j) { return j.get<std::vector<int>>(); }

// prog_nvtx's ranges as the trace must show them; `wide_domain_range` is the name of the range
// pushed in the domain created with nvtxDomainCreateW.
void expect_ranges(const Recorded& r, const std::string& wide_domain_range) {
  ASSERT_EQ(r.allocs, 10u);
  const uint32_t main_thread = r.alloc_thread.at(1), second = r.alloc_thread.at(8);
  EXPECT_NE(main_thread, second);
  EXPECT_EQ(r.by_thread.size(), 2u);
  const std::vector<std::string> main_expected = {
      "mark:warmup done", "push:outer", "push:inner", "pop", "mark:checkpoint", "push:wide-\u00fc\u4e2d", "pop",
      "push:ex-ascii", "mark:mark-wide", "pop", "pop",
      "push:mydomain::registered", "mark:mydomain::dmark", "push:default-domain", "pop", "pop",
      "push:" + wide_domain_range, "pop"};
  EXPECT_EQ(r.by_thread.count(main_thread) ? r.by_thread.at(main_thread) : std::vector<std::string>{}, main_expected);
  const std::vector<std::string> second_expected = {"push:t2-outer", "push:t2-inner", "pop", "pop"};
  EXPECT_EQ(r.by_thread.count(second) ? r.by_thread.at(second) : std::vector<std::string>{}, second_expected);
  const std::map<uint64_t, std::string> ranges = {
      {1, "outer"},    {2, "inner"},  {3, "wide-\u00fc\u4e2d"}, {4, "ex-ascii"}, {5, ""},
      {6, "mydomain::registered"}, {7, "default-domain"}, {8, "t2-outer"}, {9, "t2-inner"},
      {10, wide_domain_range}};
  EXPECT_EQ(r.alloc_range, ranges);
  for (uint64_t mib = 2; mib <= 10; ++mib) {
    EXPECT_EQ(r.alloc_thread.at(mib), mib == 8 || mib == 9 ? second : main_thread) << mib << " MiB";
  }
  // The first mark and range of the main thread, made before any CUDA memory call, are replayed when
  // that thread first records, still as NVTX's: every range and mark event is.
  ASSERT_FALSE(r.range_apis.empty());
  for (size_t i = 0; i < r.range_apis.size(); ++i) EXPECT_EQ(r.range_apis[i], Api::nvtx) << "event " << i;
}

TEST(Nvtx, RangesAndMarksBecomeEventsAndAttributeAllocations) {
  Sandbox box;
  RunResult run = box.run({Paths::bin("prog_nvtx")}, {{"NVTX_INJECTION64_PATH", Paths::shim()}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  auto out = nlohmann::json::parse(run.out);
  // Depths: 0-based level of the range pushed or popped; -1 for a pop with nothing open.
  EXPECT_EQ(ints(out["returns"]), (std::vector<int>{0, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, -1}));
  EXPECT_EQ(ints(out["thread"]), (std::vector<int>{0, 1, 1, 0}));
  expect_ranges(read_run(box.only_run_dir()), "wdom::wreg");
}

// The report's ranges table aligns by display width: "wide-ü中" takes 8 columns in 10 bytes, and
// every row's calls column ends where the header's does (issue 15, defect 11).
TEST(Nvtx, ReportAlignsWideNames) {
  Sandbox box;
  RunResult run = box.run({Paths::bin("prog_nvtx")}, {{"NVTX_INJECTION64_PATH", Paths::shim()}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ScopedColumns not_set(nullptr);
  RunResult text = run_tool({"report", box.only_run_dir()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  auto columns = [](const std::string& s) {  // one per code point, two for CJK ideographs
    size_t n = 0;
    for (unsigned char b : s) n += (b & 0xC0) == 0x80 ? 0 : b == 0xE4 || (b > 0xE4 && b < 0xEA) ? 2 : 1;
    return n;
  };
  const size_t table = text.out.find("\nranges: ");
  ASSERT_NE(table, std::string::npos) << text.out;
  std::istringstream lines(text.out.substr(text.out.find("\n    name ", table) + 1));
  std::string header, under;
  std::getline(lines, header);
  std::getline(lines, under);  // the header's second row ("entry", "change")
  const size_t calls_end = columns(header.substr(0, header.find("calls") + 5));
  size_t rows = 0;
  bool wide = false;
  const std::regex row(R"(^    (.*?) +([0-9][0-9,]*) )");
  for (std::string line; std::getline(lines, line) && line.starts_with("    ");) {
    std::smatch m;
    if (line.find("without an open range") != std::string::npos) continue;
    ASSERT_TRUE(std::regex_search(line, m, row)) << line;
    EXPECT_EQ(columns(line.substr(0, m.position(2) + m.length(2))), calls_end) << line;
    wide = wide || m[1] == "wide-\u00fc\u4e2d";
    ++rows;
  }
  EXPECT_EQ(rows, 9u) << text.out;
  EXPECT_TRUE(wide) << text.out;
}

TEST(Nvtx, WithoutTheInjectionVariableNothingChanges) {
  Sandbox box;
  RunResult run = box.run({Paths::bin("prog_nvtx")}, {{"NVTX_INJECTION64_PATH", "<unset>"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto out = nlohmann::json::parse(run.out);
  for (int v : ints(out["returns"])) EXPECT_EQ(v, -2);  // NVTX_NO_PUSH_POP_TRACKING: no tool attached
  Recorded r = read_run(box.only_run_dir());
  EXPECT_EQ(r.allocs, 10u);
  EXPECT_TRUE(r.by_thread.empty());
}

TEST(Nvtx, NvtxAloneCreatesNoRunDirectory) {
  Sandbox box;
  RunResult run = box.run({Paths::bin("prog_nvtx"), "nvtx-only"}, {{"NVTX_INJECTION64_PATH", Paths::shim()}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(ints(nlohmann::json::parse(run.out)["returns"]), (std::vector<int>{0, 0}));  // the shim was attached
  EXPECT_TRUE(box.run_dirs().empty());
}

TEST(Nvtx, AChainedToolSeesEveryCallToo) {
  Sandbox box;
  const std::string counts = box.dir() + "/fake_nvtx.json";
  RunResult run = box.run({Paths::bin("prog_nvtx")}, {{"NVTX_INJECTION64_PATH", Paths::shim()},
                                                       {"GPUMEMPROF_NVTX_CHAIN", Paths::bin("libfake_nvtx_tool.so")},
                                                       {"FAKE_NVTX_OUT", counts}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  auto out = nlohmann::json::parse(run.out);
  EXPECT_EQ(ints(out["returns"])[0], 100);  // a chained tool's return values are what NVTX returns
  EXPECT_EQ(ints(out["thread"]), (std::vector<int>{100, 101, 201, 200}));
  // extension_init: the NVTX memory extension's initialization was handed on to it.
  EXPECT_EQ(read_json_file(counts), nlohmann::json::parse(R"({"init":1,"extension_init":1,"push_a":4,"pop":7,
      "mark_a":2,"domain_create":1,"register_string":1,"domain_push":3,"domain_pop":3,"foreign_handles":0})"));
  // The chained tool handles no nvtxDomainCreateW: NVTX gives that domain and its string no
  // handle, so its range has no name.
  expect_ranges(read_run(box.only_run_dir()), "(unnamed)");
}

// Every module that includes the NVTX headers is an NVTX instance of its own, initialized on its
// first call: each is attached, and each chains to the other tool's handlers of that instance.
TEST(Nvtx, EveryModuleUsingNvtxIsAttached) {
  const std::vector<std::string> sequence = {"push:exe", "push:lib", "pop", "pop"};
  const std::map<uint64_t, std::string> ranges = {{1, "exe"}, {2, "lib"}, {3, "exe"}};
  {
    Sandbox box;
    RunResult run = box.run({Paths::bin("prog_nvtx"), "instances"}, {{"NVTX_INJECTION64_PATH", Paths::shim()}});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(ints(nlohmann::json::parse(run.out)["returns"]), (std::vector<int>{0, 1, 1, 0}));
    Recorded r = read_run(box.only_run_dir());
    ASSERT_EQ(r.by_thread.size(), 1u);
    EXPECT_EQ(r.by_thread.begin()->second, sequence);
    EXPECT_EQ(r.alloc_range, ranges);
  }
  Sandbox box;
  const std::string counts = box.dir() + "/fake_nvtx.json";
  RunResult run = box.run({Paths::bin("prog_nvtx"), "instances"},
                          {{"NVTX_INJECTION64_PATH", Paths::shim()},
                           {"GPUMEMPROF_NVTX_CHAIN", Paths::bin("libfake_nvtx_tool.so")},
                           {"FAKE_NVTX_OUT", counts}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(ints(nlohmann::json::parse(run.out)["returns"]), (std::vector<int>{100, 101, 201, 200}));
  auto c = read_json_file(counts);
  EXPECT_EQ(c["init"], 2);
  EXPECT_EQ(c["push_a"], 2);
  EXPECT_EQ(c["pop"], 2);
  Recorded r = read_run(box.only_run_dir());
  ASSERT_EQ(r.by_thread.size(), 1u);
  EXPECT_EQ(r.by_thread.begin()->second, sequence);
  EXPECT_EQ(r.alloc_range, ranges);
}

TEST(Nvtx, ABadChainIsReportedAndProfilingGoesOn) {
  Sandbox box;
  RunResult run = box.run({Paths::bin("prog_nvtx")}, {{"NVTX_INJECTION64_PATH", Paths::shim()},
                                                       {"GPUMEMPROF_NVTX_CHAIN", box.dir() + "/missing.so"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("gpumemprof: cannot load the NVTX tool in GPUMEMPROF_NVTX_CHAIN"), std::string::npos)
      << run.err;
  expect_ranges(read_run(box.only_run_dir()), "wdom::wreg");
}

TEST(Nvtx, ChainingToTheShimItselfIsIgnored) {
  Sandbox box;
  RunResult run = box.run({Paths::bin("prog_nvtx")},
                          {{"NVTX_INJECTION64_PATH", Paths::shim()}, {"GPUMEMPROF_NVTX_CHAIN", Paths::shim()}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(ints(nlohmann::json::parse(run.out)["returns"])[0], 0);
  expect_ranges(read_run(box.only_run_dir()), "wdom::wreg");
}

TEST(Nvtx, PassThroughLeavesOnlyTheChainedTool) {
  Sandbox box;
  const std::string counts = box.dir() + "/fake_nvtx.json";
  RunResult run = box.run({Paths::bin("prog_nvtx")}, {{"NVTX_INJECTION64_PATH", Paths::shim()},
                                                       {"GPUMEMPROF_NVTX_CHAIN", Paths::bin("libfake_nvtx_tool.so")},
                                                       {"FAKE_NVTX_OUT", counts},
                                                       {"GPUMEMPROF_ENABLE", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(ints(nlohmann::json::parse(run.out)["thread"]), (std::vector<int>{100, 101, 201, 200}));
  EXPECT_EQ(read_json_file(counts)["push_a"], 4);
  EXPECT_TRUE(box.run_dirs().empty());
}

}  // namespace
}  // namespace gmp::test
