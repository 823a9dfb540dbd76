// Recording side of attribution: native stacks and Python frames reach attribution.jsonl as
// docs/attribution.md says, read from a CPython process that allocates through ctypes.
#include <gtest/gtest.h>

#include <cstdlib>
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

// The frame reader knows CPython 3.10 to 3.13 (shim/python_layouts.h); other versions get
// native frames only, so these tests would have nothing to check there.
bool python_has_layout() {
  Sandbox probe;
  RunResult r = probe.run({"/usr/bin/env", "python3", "-c", "import sys; print(sys.version_info[1] if sys.version_info[0] == 3 else 0)"},
                          {{"LD_PRELOAD", "<unset>"}});
  const int minor = r.exit_code == 0 ? std::atoi(r.out.c_str()) : 0;
  return minor >= 10 && minor <= 13;
}

class PythonStacks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_layout_) GTEST_SKIP() << "python3 is not CPython 3.10-3.13";
  }
  static void SetUpTestSuite() {
    has_layout_ = python_has_layout();
    if (!has_layout_) return;
    box_ = new Sandbox;
    RunResult r = box_->run({"/usr/bin/env", "python3", script()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.out, "ok\n");
    dir_ = box_->only_run_dir();
    attribution_ = new Attribution(read_attribution(dir_));
    allocs_ = new std::vector<Event>(allocations(dir_));
  }
  static void TearDownTestSuite() {
    delete allocs_;
    delete attribution_;
    delete box_;
  }
  static std::string script() { return std::string(GMP_SOURCE_DIR) + "/tests/programs/py_alloc.py"; }
  static std::vector<nlohmann::json> frames(uint64_t size) { return python_frames_of(*attribution_, *allocs_, size); }

  static bool has_layout_;
  static Sandbox* box_;
  static std::string dir_;
  static Attribution* attribution_;
  static std::vector<Event>* allocs_;
};
bool PythonStacks::has_layout_ = false;
Sandbox* PythonStacks::box_ = nullptr;
std::string PythonStacks::dir_;
Attribution* PythonStacks::attribution_ = nullptr;
std::vector<Event>* PythonStacks::allocs_ = nullptr;

TEST_F(PythonStacks, FramesOfTheAllocatingLinesWhileTheGilIsHeld) {
  ASSERT_EQ(allocs_->size(), 5u);
  const auto py = frames(1 << 20);
  ASSERT_EQ(py.size(), 4u);
  EXPECT_EQ(functions(py), (std::vector<std::string>{"allocate_weights", "Model.build", "main", "<module>"}));
  EXPECT_EQ(py[0]["line"], line_of(script(), "# ALLOC_LINE"));
  EXPECT_EQ(py[0]["file"], script());
  EXPECT_EQ(py[1]["line"], line_of(script(), "# CALL_LINE"));
  EXPECT_EQ(py[3]["file"], script());
}

TEST_F(PythonStacks, FramesWhileTheGilIsReleased) {
  const auto py = frames(2 << 20);
  ASSERT_EQ(py.size(), 4u);
  EXPECT_EQ(functions(py), (std::vector<std::string>{"allocate_released", "größe", "main", "<module>"}));
  EXPECT_EQ(py[0]["line"], line_of(script(), "# RELEASED_LINE"));
  EXPECT_EQ(py[1]["line"], line_of(script(), "# LATIN1_LINE"));
}

TEST_F(PythonStacks, NamesBeyondLatin1) {
  const auto py = frames(3 << 20);
  ASSERT_GE(py.size(), 2u);
  EXPECT_EQ(py[1]["function"], "数据");
  EXPECT_EQ(py[1]["line"], line_of(script(), "# UCS2_LINE"));
}

TEST_F(PythonStacks, FramesOfAnotherPythonThread) {
  const auto py = frames(4 << 20);
  ASSERT_GE(py.size(), 3u);
  EXPECT_EQ(py[0]["function"], "allocate_released");
  EXPECT_EQ(py[1]["function"], "worker");
  EXPECT_EQ(py[1]["line"], line_of(script(), "# THREAD_LINE"));
  EXPECT_EQ(py[2]["function"], "Thread.run");  // then threading's own bootstrap frames
  for (const auto& f : py) EXPECT_NE(f["function"], "main") << "the main thread's frames leaked in";
}

TEST_F(PythonStacks, FramesOfAGenerator) {
  const auto py = frames(5 << 20);
  ASSERT_EQ(py.size(), 4u);
  EXPECT_EQ(functions(py), (std::vector<std::string>{"allocate_released", "batches", "main", "<module>"}));
  EXPECT_EQ(py[1]["line"], line_of(script(), "# GENERATOR_LINE"));
}

TEST_F(PythonStacks, ModuleMapCoversTheInterpreterAndTheShim) {
  bool shim = false, python = false;
  for (const auto& m : attribution_->modules) {
    const std::string path = m["path"];
    shim = shim || path.find("libgpumemprof.so") != std::string::npos;
    python = python || path.find("python3") != std::string::npos;
    EXPECT_LT(std::stoull(m["start"].get<std::string>(), nullptr, 16), std::stoull(m["end"].get<std::string>(), nullptr, 16));
  }
  EXPECT_TRUE(shim);
  EXPECT_TRUE(python);
}

TEST_F(PythonStacks, EightThreadsAtOnceEachWithItsOwnFrames) {
  Sandbox box;
  RunResult r = box.run({"/usr/bin/env", "python3", std::string(GMP_SOURCE_DIR) + "/tests/programs/py_threads.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.only_run_dir();
  const Attribution a = read_attribution(dir);
  const auto allocs = allocations(dir);
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
