// Attribution end to end (docs/attribution.md): prog_stacks under the shim on the fake driver, then
// `gpumemprof report`, `export --format folded` and `diff` on what it left. Known call chains,
// including one through a library dlopened after the first allocation, must come back as their
// function names; ranges must nest per thread; marks must give exact checkpoint figures; pause
// must stop and resume recording; and the C API must be harmless without the shim.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1ull << 20;

std::string stacks_run(Sandbox& box, const std::string& mode, std::map<std::string, std::string> env = {}) {
  env.emplace("GPUMEMPROF_STACKS", "32");
  RunResult r = box.run({Paths::bin("prog_stacks"), mode}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  return box.only_run_dir();
}

nlohmann::json report_json(const std::string& dir) {
  RunResult r = run_tool({"report", dir, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The site whose label starts with `prefix`, or null.
const nlohmann::json* find_site(const nlohmann::json& sites, const std::string& prefix) {
  for (const auto& s : sites) {
    if (starts_with(s["site"].get<std::string>(), prefix)) return &s;
  }
  return nullptr;
}

// The functions of a site's stack from the site frame outwards.
std::vector<std::string> callers(const nlohmann::json& site, size_t n) {
  std::vector<std::string> out;
  const auto& frames = site["frames"];
  for (size_t i = site["site_frame"].get<size_t>(); i < frames.size() && out.size() < n; ++i) {
    out.push_back(frames[i].value("function", std::string("?")));
  }
  return out;
}

std::vector<nlohmann::json> attribution_lines(const std::string& dir) {
  std::ifstream in(dir + "/attribution.jsonl");
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

void expect_chain_sites(const nlohmann::json& sites, const std::string& where) {
  const nlohmann::json* main_chain = find_site(sites, "alloc_in_main_chain_a");
  ASSERT_NE(main_chain, nullptr) << where << ": " << sites.dump(1);
  EXPECT_EQ((*main_chain)["bytes"], 3 * MiB);
  EXPECT_EQ(callers(*main_chain, 2), (std::vector<std::string>{"alloc_in_main_chain_a", "alloc_in_main_chain_b"}));
  const auto main_frames = (*main_chain)["frames"];
  EXPECT_NE(std::find_if(main_frames.begin(), main_frames.end(),
                         [](const auto& f) { return f.value("function", std::string()) == "main"; }),
            main_frames.end())
      << main_frames.dump(1);

  const nlohmann::json* plugin = find_site(sites, "plugin_alloc_level2");
  ASSERT_NE(plugin, nullptr) << where << ": " << sites.dump(1);
  EXPECT_EQ((*plugin)["bytes"], 5 * MiB);
  EXPECT_EQ(callers(*plugin, 3),
            (std::vector<std::string>{"plugin_alloc_level2", "plugin_alloc_level1", "plugin_alloc_entry"}));
  const auto& level2 = (*plugin)["frames"][(*plugin)["site_frame"].get<size_t>()];
  EXPECT_TRUE(level2["module"].get<std::string>().ends_with("/libstack_plugin.so")) << level2.dump();
  EXPECT_FALSE(level2.contains("note")) << level2.dump();

  // After the plugin was closed: the site is the program's own allocation helper.
  bool after_unload = false;
  for (const auto& s : sites) {
    for (const auto& n : callers(s, 2)) after_unload = after_unload || n == "alloc_after_unload";
  }
  EXPECT_TRUE(after_unload) << sites.dump(1);

  for (const auto& s : sites) {
    for (const auto& f : s["frames"]) {
      EXPECT_EQ(f.value("module", std::string()).find("libgpumemprof"), std::string::npos) << f.dump();
    }
  }
}

TEST(Attribution, KnownChainsSymbolizeIncludingADlopenedLibrary) {
  Sandbox box;
  const std::string dir = stacks_run(box, "chains");
  // The collector saw the plugin appear after its first module map, and go.
  bool plugin_loaded = false, plugin_unloaded = false;
  for (const auto& rec : attribution_lines(dir)) {
    const std::string path = rec.value("path", std::string());
    if (!path.ends_with("/libstack_plugin.so")) continue;
    plugin_loaded = plugin_loaded || rec["type"] == "module";
    plugin_unloaded = plugin_unloaded || rec["type"] == "unloaded";
  }
  EXPECT_TRUE(plugin_loaded);
  EXPECT_TRUE(plugin_unloaded);

  const auto j = report_json(dir);
  const auto& a = j["analysis"];
  EXPECT_EQ(a["attribution"]["skipped_lines"], 0);
  EXPECT_EQ(a["attribution"]["stack_events"], 3);
  expect_chain_sites(a["devices"][0]["sites_at_peak"], "at the peak");
  expect_chain_sites(a["leak_sites"], "at exit");  // nothing was freed

  RunResult text = run_tool({"report", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("by call site:"), std::string::npos) << text.out;
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(5\.00 MiB +in 1 +plugin_alloc_level2)"))) << text.out;
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(from plugin_alloc_level1)"))) << text.out;
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(from alloc_in_main_chain_b)"))) << text.out;
}

TEST(Attribution, StacksUseTheLibunwindBesideTheShim) {
  // The build copies libunwind.so.8 next to the shim so that hosts without it still unwind fast.
  Sandbox box;
  const std::string dir = stacks_run(box, "chains", {{"GPUMEMPROF_LOG_LEVEL", "info"}});
  std::ifstream log(dir + "/gpumemprof.log");
  std::stringstream text;
  text << log.rdbuf();
  const std::string shim = Paths::shim();
  const std::string beside = shim.substr(0, shim.rfind('/') + 1) + "libunwind.so.8";
  EXPECT_NE(text.str().find("call stacks: libunwind from " + beside), std::string::npos) << text.str();
}

TEST(Attribution, FoldedExportOfThePeak) {
  Sandbox box;
  const std::string dir = stacks_run(box, "chains");
  const std::string file = box.dir() + "/peak.folded";
  RunResult r = run_tool({"export", dir, "--format", "folded", "-o", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(file);
  std::vector<std::string> lines;
  uint64_t total = 0;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    // "frame;frame;... BYTES": one space before the weight, frames joined by ';'.
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, std::regex(R"((GPU 0(;[^;]+)+) (\d+))"))) << line;
    total += std::stoull(m[3]);
  }
  EXPECT_EQ(lines.size(), 3u);
  EXPECT_EQ(total, 9 * MiB);
  auto has = [&](const std::string& re) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return std::regex_search(l, std::regex(re)); });
  };
  // Each frame is its function and, where the line is known, its file and line: "main (prog.cpp:42)".
  const std::string at = R"((?: \([^;()]+:\d+\))?)";
  EXPECT_TRUE(has(";main" + at + ";(.*;)?alloc_in_main_chain_b" + at + ";alloc_in_main_chain_a" + at + " 3145728$"));
  EXPECT_TRUE(has(";main" + at + ";(.*;)?plugin_alloc_entry" + at + ";plugin_alloc_level1" + at + ";plugin_alloc_level2" +
                  at + " 5242880$"));
  EXPECT_TRUE(has(";alloc_after_unload" + at + ";[^;]*alloc[^;]* 1048576$"));
  EXPECT_TRUE(has(R"(;main \(prog_stacks\.cpp:\d+\);)")) << "lines are kept where addr2line knows them";
}

// Thread 1: outer { 10M (A), inner { 20M, free A } }; thread 2 opens worker { 5M } while outer is
// open and closes it after thread 1 is done. Allocated (all threads): 1M before, 11M when worker
// opens, 16M when inner opens, 36M at the peak, 26M at every exit.
TEST(Attribution, RangesNestPerThreadAcrossTwoThreads) {
  Sandbox box;
  const std::string dir = stacks_run(box, "ranges", {{"GPUMEMPROF_STACKS", "0"}});
  const auto j = report_json(dir);
  const auto& ranges = j["analysis"]["ranges"];
  ASSERT_EQ(ranges.size(), 3u) << ranges.dump(1);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& r : ranges) by_name[r["name"]] = r;
  const auto& outer = by_name["outer"];
  EXPECT_EQ(outer["calls"], 1);
  EXPECT_EQ(outer["bytes_allocated"], 30 * MiB);  // its thread's 10M and 20M, not thread 2's 5M
  EXPECT_EQ(outer["allocations"], 2);
  EXPECT_EQ(outer["peak_above_entry"], 35 * MiB);
  EXPECT_EQ(outer["net_change"], 25 * MiB);
  const auto& inner = by_name["inner"];
  EXPECT_EQ(inner["bytes_allocated"], 20 * MiB);
  EXPECT_EQ(inner["peak_above_entry"], 20 * MiB);
  EXPECT_EQ(inner["net_change"], 10 * MiB);
  const auto& worker = by_name["worker"];
  EXPECT_EQ(worker["bytes_allocated"], 5 * MiB);
  EXPECT_EQ(worker["peak_above_entry"], 25 * MiB);
  EXPECT_EQ(worker["net_change"], 15 * MiB);
  for (const auto& r : ranges) {
    EXPECT_EQ(r["open_at_end"], 0) << r.dump();
    EXPECT_GT(r["total_ns"].get<uint64_t>(), 0u) << r.dump();
  }
  // worker opened inside outer's lifetime and closed after it: the times say so.
  EXPECT_GT(worker["total_ns"].get<uint64_t>(), inner["total_ns"].get<uint64_t>());
  EXPECT_EQ(j["analysis"]["attribution"]["unbalanced_pops"], 0);
  RunResult text = run_tool({"report", dir});
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(ranges: 3 names, 3 calls)"))) << text.out;
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(outer +1 .*30\.00 MiB +35\.00 MiB +\+25\.00 MiB)"))) << text.out;
}

TEST(Attribution, MarksGiveExactCheckpoints) {
  Sandbox box;
  const std::string dir = stacks_run(box, "marks", {{"GPUMEMPROF_STACKS", "0"}});
  const auto j = report_json(dir);
  const auto& marks = j["analysis"]["marks"];
  ASSERT_EQ(marks.size(), 4u) << marks.dump(1);
  struct Want {
    const char* name;
    uint64_t allocated, since, so_far;
    int64_t growth;
  };
  const Want want[] = {{"start", 1 * MiB, 1 * MiB, 1 * MiB, static_cast<int64_t>(1 * MiB)},
                       {"after_a", 101 * MiB, 101 * MiB, 101 * MiB, static_cast<int64_t>(100 * MiB)},
                       {"after_b", 51 * MiB, 151 * MiB, 151 * MiB, -static_cast<int64_t>(50 * MiB)},
                       {"end", 81 * MiB, 351 * MiB, 351 * MiB, static_cast<int64_t>(30 * MiB)}};
  uint64_t last_at = 0;
  for (size_t i = 0; i < 4; ++i) {
    const auto& m = marks[i];
    EXPECT_EQ(m["name"], want[i].name);
    EXPECT_EQ(m["allocated"], want[i].allocated) << m.dump();
    EXPECT_EQ(m["peak_since_previous"], want[i].since) << m.dump();
    EXPECT_EQ(m["peak_so_far"], want[i].so_far) << m.dump();
    EXPECT_EQ(m["growth"], want[i].growth) << m.dump();
    EXPECT_EQ(m["largest_growth"], i == 1) << m.dump();
    EXPECT_GE(m["at_ns"].get<uint64_t>(), last_at);
    last_at = m["at_ns"];
  }
  RunResult text = run_tool({"report", dir});
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(\n    largest growth: #2 after_a, \+100\.00 MiB at [0-9.]+ ms\n)"))) << text.out;
}

// 1M (A); pause; 7M (B); free A; resume; 3M (C); free B; free C.
TEST(Attribution, PauseStopsAndResumeRestartsRecording) {
  Sandbox box;
  const std::string dir = stacks_run(box, "pause", {{"GPUMEMPROF_STACKS", "0"}});
  const auto j = report_json(dir);
  EXPECT_EQ(j["devices"][0]["alloc_count"], 2);  // A and C
  EXPECT_EQ(j["devices"][0]["allocated_bytes"]["peak"], 3 * MiB);
  EXPECT_EQ(j["unknown_frees"], 1);  // B's free: its allocation was never recorded
  const auto& pauses = j["analysis"]["pauses"];
  ASSERT_EQ(pauses.size(), 1u);
  EXPECT_EQ(pauses[0]["frees"], 1);  // A's free, recorded while paused
  EXPECT_EQ(pauses[0]["allocations"], 0);
  EXPECT_FALSE(pauses[0]["resumed_at_ns"].is_null());
  RunResult csv = run_tool({"export", dir, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::vector<std::string> ops;
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string t, op, kind, api, device, address, size;
    std::getline(fields, t, ',');
    std::getline(fields, op, ',');
    std::getline(fields, kind, ',');
    std::getline(fields, api, ',');
    std::getline(fields, device, ',');
    std::getline(fields, address, ',');
    std::getline(fields, size, ',');
    if (op == "alloc") ops.push_back("alloc " + size);
    if (op == "free" || op == "pause" || op == "resume") ops.push_back(op);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"alloc 1048576", "pause", "free", "resume", "alloc 3145728", "free", "free"}));
}

TEST(Attribution, CApiDoesNothingWithoutTheShim) {
  Sandbox box;
  for (const char* mode : {"chains", "ranges", "marks", "pause"}) {
    RunResult r = box.run({Paths::bin("prog_stacks"), mode}, {{"LD_PRELOAD", "<unset>"}});
    EXPECT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    EXPECT_EQ(r.out, "ok\n") << mode;
  }
  EXPECT_TRUE(box.run_dirs().empty());
}

TEST(Attribution, WithoutStacksTheReportIsUnchanged) {
  Sandbox box;
  const std::string dir = stacks_run(box, "chains", {{"GPUMEMPROF_STACKS", "0"}});
  EXPECT_FALSE(exists(dir + "/attribution.jsonl"));
  const auto j = report_json(dir);
  ASSERT_EQ(j["analysis"]["devices"][0]["sites_at_peak"].size(), 1u);
  EXPECT_EQ(j["analysis"]["devices"][0]["sites_at_peak"][0]["site"], "(no stack captured)");
  RunResult text = run_tool({"report", dir});
  EXPECT_EQ(text.out.find("by call site"), std::string::npos) << text.out;
  RunResult folded = run_tool({"export", dir, "--format", "folded"});
  EXPECT_EQ(folded.out, "GPU 0;(no stack captured) 9437184\n");
  EXPECT_NE(folded.err.find("GPUMEMPROF_STACKS"), std::string::npos) << folded.err;
}

// A Python program allocating through ctypes (PyDLL keeps the GIL, so the shim reads its Python
// frames): the site is the Python line, the interpreter's native frames give way to the Python
// frames, and the C frames between (ctypes, libffi) stay as the "via" part.
TEST(Attribution, PythonFramesReplaceTheInterpreter) {
  std::string python;
  std::istringstream path(getenv("PATH") ? getenv("PATH") : "/usr/bin");
  for (std::string d; python.empty() && std::getline(path, d, ':');) {
    if (access((d + "/python3").c_str(), X_OK) == 0) python = d + "/python3";
  }
  if (python.empty()) GTEST_SKIP() << "python3 is not installed";
  Sandbox box;
  const std::string script = box.dir() + "/model.py";
  std::ofstream(script) << R"(import ctypes
cuda = ctypes.PyDLL("libcuda.so.1")
def check(r):
    assert r == 0, r
check(cuda.cuInit(0))
dev = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(dev), 0))
ctx = ctypes.c_void_p()
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
check(cuda.cuCtxSetCurrent(ctx))
def make_tensor(n):
    p = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)))
    return p
def forward():
    return [make_tensor(64 << 20), make_tensor(32 << 20)]
keep = forward()
print("ok")
)";
  RunResult r = box.run({python, script}, {{"GPUMEMPROF_STACKS", "64"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.only_run_dir();
  const auto j = report_json(dir);
  const auto& sites = j["analysis"]["devices"][0]["sites_at_peak"];
  ASSERT_EQ(sites.size(), 1u) << sites.dump(1);
  EXPECT_EQ(sites[0]["site"], "make_tensor (model.py:13)");
  EXPECT_EQ(sites[0]["bytes"], 96 * MiB);
  const auto& frames = sites[0]["frames"];
  const size_t site = sites[0]["site_frame"];
  ASSERT_EQ(frames.size(), site + 3) << frames.dump(1);  // the Python frames end the stack
  EXPECT_EQ(frames[site + 1]["label"], "forward (model.py:16)");
  EXPECT_EQ(frames[site + 2]["label"], "<module> (model.py:17)");
  EXPECT_EQ(frames[site + 2]["file"], script);
  for (size_t i = 0; i < site; ++i) {
    EXPECT_FALSE(frames[i]["python"].get<bool>());
    const std::string module = frames[i].value("module", std::string());
    const std::string base = module.substr(module.rfind('/') + 1);
    EXPECT_FALSE(base.starts_with("python") || base.starts_with("libpython")) << frames[i].dump();
  }
  RunResult folded = run_tool({"export", dir, "--format", "folded"});
  EXPECT_TRUE(folded.out.starts_with("GPU 0;<module> (model.py:17);forward (model.py:16);make_tensor (model.py:13);"))
      << folded.out;
}

// Two runs of one program: their stack ids need not agree, their site names do.
TEST(Attribution, DiffComparesCallSitesByName) {
  Sandbox a_box, b_box;
  const std::string a = stacks_run(a_box, "chains");
  const std::string b = stacks_run(b_box, "chains");
  RunResult r = run_tool({"diff", a, b, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& sites = j["devices"][0]["live_at_peak_by_site"];
  ASSERT_EQ(sites.size(), 3u) << sites.dump(1);
  for (const auto& s : sites) {
    EXPECT_EQ(s["change"], 0) << s.dump();
    EXPECT_EQ(s["site"].get<std::string>().find("stack "), std::string::npos) << s.dump();
  }
  EXPECT_EQ(j["leaks_by_site"].size(), 3u);
  RunResult text = run_tool({"diff", a, b});
  EXPECT_NE(text.out.find("plugin_alloc_level2"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace gmp::test
