// Recording side of attribution: native stacks and Python frames reach attribution.jsonl as
// docs/attribution.md says, read from a CPython process that allocates through ctypes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

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

TEST(PythonStacks, FramesOfTheAllocatingLinesWhileTheGilIsHeld) {
  Sandbox box;
  const std::string script = std::string(GMP_SOURCE_DIR) + "/tests/programs/py_alloc.py";
  RunResult r = box.run({"/usr/bin/env", "python3", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.only_run_dir();
  const Attribution a = read_attribution(dir);
  const auto allocs = allocations(dir);
  ASSERT_EQ(allocs.size(), 2u);
  ASSERT_NE(allocs[0].stack_id, 0u);
  const nlohmann::json& stack = a.by_id.at(allocs[0].stack_id);
  ASSERT_EQ(stack["type"], "stack");
  std::vector<nlohmann::json> py;
  size_t native = 0;
  for (const auto& f : stack["frames"]) {
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
  ASSERT_GE(py.size(), 4u);
  EXPECT_EQ(py[0]["function"], "allocate_weights");
  EXPECT_EQ(py[0]["line"], line_of(script, "# ALLOC_LINE"));
  EXPECT_EQ(py[0]["file"], script);
  EXPECT_EQ(py[1]["function"], "build_model");
  EXPECT_EQ(py[1]["line"], line_of(script, "# CALL_LINE"));
  EXPECT_EQ(py[2]["function"], "main");
  EXPECT_EQ(py[3]["function"], "<module>");
  // With the GIL released by ctypes.CDLL, only native frames.
  ASSERT_NE(allocs[1].stack_id, 0u);
  for (const auto& f : a.by_id.at(allocs[1].stack_id)["frames"]) {
    EXPECT_NE(f.get<std::string>().rfind("py:", 0), 0u);
  }
  // The module map covers the interpreter and the shim.
  bool shim = false, python = false;
  for (const auto& m : a.modules) {
    const std::string path = m["path"];
    shim = shim || path.find("libgpumemprof.so") != std::string::npos;
    python = python || path.find("python3") != std::string::npos;
    EXPECT_LT(std::stoull(m["start"].get<std::string>(), nullptr, 16), std::stoull(m["end"].get<std::string>(), nullptr, 16));
  }
  EXPECT_TRUE(shim);
  EXPECT_TRUE(python);
}

TEST(PythonStacks, OffWhenAskedAndNoStacksAtDepthZero) {
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
