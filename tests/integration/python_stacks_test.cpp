// Recording side of attribution: native stacks and Python frames reach attribution.jsonl as
// docs/attribution.md says, read from CPython processes that allocate through ctypes: once per
// interpreter of GMP_TEST_PYTHONS (every 3.10-3.13 the build found, tests/test_pythons.cmake).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>

#include "harness.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

struct Attribution {
  std::map<uint32_t, nlohmann::json> by_id;
  std::vector<nlohmann::json> modules;
};

Attribution read_attribution(const std::string& dir) {
  Attribution a;
  std::ifstream in(dir + "/attribution.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "module") a.modules.push_back(j);
    if (j.contains("id")) a.by_id[j["id"].get<uint32_t>()] = j;
  }
  return a;
}

std::vector<Event> allocations(const std::string& dir) {
  reader::TraceReader trace;
  EXPECT_TRUE(trace.open(dir + "/trace.gmpt")) << trace.error();
  std::vector<Event> out;
  Event e;
  while (trace.next(e)) {
    if (e.op == Op::Alloc) out.push_back(e);
  }
  return out;
}

int line_of(const std::string& path, const std::string& marker) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  return -1;
}

// The Python frames of the allocation of `size` bytes, innermost first; native frames must all
// come before them.
std::vector<nlohmann::json> python_frames_of(const Attribution& a, const std::vector<Event>& allocs, uint64_t size) {
  std::vector<nlohmann::json> py;
  for (const Event& e : allocs) {
    if (e.size != size) continue;
    EXPECT_NE(e.stack_id, 0u);
    size_t native = 0;
    for (const auto& f : a.by_id.at(e.stack_id)["frames"]) {
      const std::string s = f;
      if (s.rfind("py:", 0) == 0) {
        py.push_back(a.by_id.at(static_cast<uint32_t>(std::stoul(s.substr(3)))));
      } else {
        EXPECT_TRUE(py.empty()) << "native frames come before Python frames";
        EXPECT_EQ(s.rfind("0x", 0), 0u) << s;
        ++native;
      }
    }
    EXPECT_GT(native, 0u);
    return py;
  }
  ADD_FAILURE() << "no allocation of " << size << " bytes";
  return py;
}

std::vector<std::string> functions(const std::vector<nlohmann::json>& frames) {
  std::vector<std::string> out;
  for (const auto& f : frames) out.push_back(f["function"]);
  return out;
}

std::string script(const std::string& name) { return std::string(GMP_SOURCE_DIR) + "/tests/programs/" + name; }

// One run of a script under one interpreter, shared by the tests that read it.
struct ScriptRun {
  Sandbox box;
  RunResult result;
  std::string dir;
  Attribution attribution;
  std::vector<Event> allocs;
};

const ScriptRun& run_script(const std::string& python, const std::string& name) {
  static std::map<std::string, std::unique_ptr<ScriptRun>> runs;
  std::unique_ptr<ScriptRun>& run = runs[python + " " + name];
  if (run == nullptr) {
    run = std::make_unique<ScriptRun>();
    run->result = run->box.run({python, script(name)});
    if (run->result.exit_code == 0) {
      run->dir = run->box.only_run_dir();
      run->attribution = read_attribution(run->dir);
      run->allocs = allocations(run->dir);
    }
  }
  return *run;
}

class PythonStacks : public ::testing::TestWithParam<std::string> {
 protected:
  // What the frame of a function with qualified name `qualname` is called: CPython 3.10's code
  // objects have no co_qualname, only the bare name.
  std::string named(const std::string& qualname) {
    static std::map<std::string, int> minors;
    auto [it, fresh] = minors.emplace(GetParam(), 0);
    if (fresh) {
      Sandbox probe;
      RunResult r = probe.run({GetParam(), "-c", "import sys; print(sys.version_info[1])"}, {{"LD_PRELOAD", "<unset>"}});
      it->second = std::atoi(r.out.c_str());
    }
    return it->second >= 11 ? qualname : qualname.substr(qualname.rfind('.') + 1);
  }
  const ScriptRun& run() {
    const ScriptRun& r = run_script(GetParam(), "py_alloc.py");
    EXPECT_EQ(r.result.exit_code, 0) << r.result.err;
    EXPECT_EQ(r.result.out, "ok\n");
    return r;
  }
  std::vector<nlohmann::json> frames(uint64_t size) { return python_frames_of(run().attribution, run().allocs, size); }
  static std::string script() { return gmp::test::script("py_alloc.py"); }
};

TEST_P(PythonStacks, FramesOfTheAllocatingLinesWhileTheGilIsHeld) {
  ASSERT_EQ(run().allocs.size(), 5u);
  const auto py = frames(1 << 20);
  ASSERT_EQ(py.size(), 4u);
  EXPECT_EQ(functions(py), (std::vector<std::string>{"allocate_weights", named("Model.build"), "main", "<module>"}));
  EXPECT_EQ(py[0]["line"], line_of(script(), "# ALLOC_LINE"));
  EXPECT_EQ(py[0]["file"], script());
  EXPECT_EQ(py[1]["line"], line_of(script(), "# CALL_LINE"));
  EXPECT_EQ(py[3]["file"], script());
}

TEST_P(PythonStacks, FramesWhileTheGilIsReleased) {
  const auto py = frames(2 << 20);
  ASSERT_EQ(py.size(), 4u);
  EXPECT_EQ(functions(py), (std::vector<std::string>{"allocate_released", "größe", "main", "<module>"}));
  EXPECT_EQ(py[0]["line"], line_of(script(), "# RELEASED_LINE"));
  EXPECT_EQ(py[1]["line"], line_of(script(), "# LATIN1_LINE"));
}

TEST_P(PythonStacks, NamesBeyondLatin1) {
  const auto py = frames(3 << 20);
  ASSERT_GE(py.size(), 2u);
  EXPECT_EQ(py[1]["function"], "数据");
  EXPECT_EQ(py[1]["line"], line_of(script(), "# UCS2_LINE"));
}

TEST_P(PythonStacks, FramesOfAnotherPythonThread) {
  const auto py = frames(4 << 20);
  ASSERT_GE(py.size(), 3u);
  EXPECT_EQ(py[0]["function"], "allocate_released");
  EXPECT_EQ(py[1]["function"], "worker");
  EXPECT_EQ(py[1]["line"], line_of(script(), "# THREAD_LINE"));
  EXPECT_EQ(py[2]["function"], named("Thread.run"));  // then threading's own bootstrap frames
  for (const auto& f : py) EXPECT_NE(f["function"], "main") << "the main thread's frames leaked in";
}

TEST_P(PythonStacks, FramesOfAGenerator) {
  const auto py = frames(5 << 20);
  ASSERT_EQ(py.size(), 4u);
  EXPECT_EQ(functions(py), (std::vector<std::string>{"allocate_released", "batches", "main", "<module>"}));
  EXPECT_EQ(py[1]["line"], line_of(script(), "# GENERATOR_LINE"));
}

TEST_P(PythonStacks, ModuleMapCoversTheInterpreterAndTheShim) {
  bool shim = false, python = false;
  for (const auto& m : run().attribution.modules) {
    const std::string path = m["path"];
    shim = shim || path.find("libgpumemprof.so") != std::string::npos;
    python = python || path.find("python3") != std::string::npos || path.find("libpython") != std::string::npos;
    EXPECT_LT(std::stoull(m["start"].get<std::string>(), nullptr, 16), std::stoull(m["end"].get<std::string>(), nullptr, 16));
  }
  EXPECT_TRUE(shim);
  EXPECT_TRUE(python);
}

TEST_P(PythonStacks, EightThreadsAtOnceEachWithItsOwnFrames) {
  const ScriptRun& r = run_script(GetParam(), "py_threads.py");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const Attribution& a = r.attribution;
  const auto& allocs = r.allocs;
  ASSERT_EQ(allocs.size(), 8u * 200u);
  std::map<uint64_t, size_t> per_size;
  for (const Event& e : allocs) {
    ++per_size[e.size];
    std::string innermost;
    for (const auto& f : a.by_id.at(e.stack_id)["frames"]) {
      const std::string s = f;
      if (s.rfind("py:", 0) == 0) {
        innermost = a.by_id.at(static_cast<uint32_t>(std::stoul(s.substr(3))))["function"];
        break;
      }
    }
    EXPECT_EQ(innermost, "worker_" + std::to_string((e.size >> 20) - 1)) << e.size;
  }
  EXPECT_EQ(per_size.size(), 8u);
  for (const auto& [size, n] : per_size) EXPECT_EQ(n, 200u) << size;
}

// allocate_released wraps the driver call for four callers: the report tells them apart by the
// caller (issue 15, defect 9), and names the run by its script (defect 10).
TEST_P(PythonStacks, ReportTellsAThinHelpersCallersApartAndNamesTheScript) {
  const ScriptRun& r = run();
  RunResult report = run_tool({"report", r.dir, "--json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto j = nlohmann::json::parse(report.out);
  const std::string released = "allocate_released (py_alloc.py:" + std::to_string(line_of(script(), "# RELEASED_LINE"));
  auto at = [&](const char* marker) { return " (py_alloc.py:" + std::to_string(line_of(script(), marker)) + ")"; };
  std::map<std::string, uint64_t> sites;
  for (const auto& site : j["analysis"]["leak_sites"]) sites[site["site"]] = site["bytes"];
  const std::map<std::string, uint64_t> expected = {
      {"allocate_weights" + at("# ALLOC_LINE"), 1 << 20},
      {released + ") from größe" + at("# LATIN1_LINE"), 2 << 20},
      {released + ") from 数据" + at("# UCS2_LINE"), 3 << 20},
      {released + ") from worker" + at("# THREAD_LINE"), 4 << 20},
      {released + ") from batches" + at("# GENERATOR_LINE"), 5 << 20}};
  EXPECT_EQ(sites, expected);
  RunResult text = run_tool({"report", r.dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\n  process py_alloc.py (pid "), std::string::npos) << text.out;
  // Each of the largest allocations names its caller too.
  EXPECT_NE(text.out.find("  " + released + ") from 数据" + at("# UCS2_LINE") + "\n"), std::string::npos) << text.out;
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonStacks, ::testing::ValuesIn(test_pythons()), interpreter_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PythonStacks);

TEST(PythonStacksOld, AVersionWithoutALayoutGetsNativeFramesOnly) {
  const std::string python = GMP_TEST_OLD_PYTHON;
  if (python.empty()) GTEST_SKIP() << "no CPython older than 3.10 was found";
  const ScriptRun& r = run_script(python, "py_alloc.py");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  EXPECT_EQ(r.result.out, "ok\n");
  ASSERT_EQ(r.allocs.size(), 5u);
  for (const auto& [id, j] : r.attribution.by_id) EXPECT_NE(j["type"], "pyframe");
  for (const Event& e : r.allocs) EXPECT_NE(e.stack_id, 0u);
}

TEST(PythonStacksOff, OffWhenAskedAndNoStacksAtDepthZero) {
  Sandbox box;
  const std::string script = std::string(GMP_SOURCE_DIR) + "/tests/programs/py_alloc.py";
  ASSERT_EQ(box.run({"/usr/bin/env", "python3", script}, {{"GPUMEMPROF_PYTHON_STACKS", "0"}}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  const Attribution a = read_attribution(dir);
  for (const auto& [id, j] : a.by_id) EXPECT_NE(j["type"], "pyframe");
  Sandbox none;
  ASSERT_EQ(none.run({"/usr/bin/env", "python3", script}, {{"GPUMEMPROF_STACKS", "0"}}).exit_code, 0);
  for (const Event& e : allocations(none.only_run_dir())) EXPECT_EQ(e.stack_id, 0u);
}

}  // namespace
}  // namespace gmp::test
