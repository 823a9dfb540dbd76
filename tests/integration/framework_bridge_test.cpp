// The PyTorch framework bridge end to end, without a GPU (docs/framework-bridge.md): Python programs
// (tests/fake_torch/torch_workload.py) on a fake torch whose libc10_cuda.so has PyTorch's mangled
// names, typeinfo, virtual-table slot and TraceEntry layout (tests/fake_torch/README.md), under
// `gpumemprof run` or the documented LD_PRELOAD + PYTHONPATH route. The figures in summary.json must
// be exactly what the fake torch itself says (torch.cuda.memory_stats), printed by each program.
#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <typeinfo>

#include "../../shim/torch_layouts.h"
#include "harness.h"
#include "torch_run.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

uint64_t fake(const TorchRun& r, const std::string& stat) { return r.fake["stats"][stat].get<uint64_t>(); }

nlohmann::json counter(uint64_t current, uint64_t peak) { return {{"current", current}, {"peak", peak}}; }

// The framework figures of device 0 are PyTorch's own: allocated = requested_bytes, reserved =
// reserved_bytes; the driver level still sees every segment.
void expect_figures_of_torch(const TorchRun& r) {
  const auto& s = r.summary;
  ASSERT_TRUE(s["devices"][0].contains("framework")) << s.dump(1);
  const auto& f = s["devices"][0]["framework"];
  EXPECT_EQ(f["allocated_bytes"], counter(fake(r, "requested_bytes.all.current"), fake(r, "requested_bytes.all.peak")));
  EXPECT_EQ(f["reserved_bytes"], counter(fake(r, "reserved_bytes.all.current"), fake(r, "reserved_bytes.all.peak")));
  EXPECT_EQ(f["cached_bytes"], fake(r, "reserved_bytes.all.current") - fake(r, "requested_bytes.all.current"));
  EXPECT_EQ(f["outside_bytes"]["current"], 0);
  EXPECT_EQ(s["devices"][0]["reserved_bytes"],
            counter(fake(r, "reserved_bytes.all.current"), fake(r, "reserved_bytes.all.peak")));
  EXPECT_EQ(s["framework"]["cached_at_exit"]["count"], r.fake["segments"]);
  EXPECT_EQ(s["framework"]["cached_at_exit"]["bytes"], fake(r, "reserved_bytes.all.current"));
}

void expect_attached(const TorchRun& r, const std::string& version = "2.11.0") {
  EXPECT_EQ(r.result.exit_code, 0) << r.result.err;
  ASSERT_FALSE(r.dir.empty()) << r.result.err;
  EXPECT_EQ(r.summary["framework"]["state"], "attached") << r.summary.dump(1) << r.log;
  EXPECT_EQ(r.summary["framework"]["version"], version);
  EXPECT_FALSE(r.summary["framework"].contains("refusal"));
  expect_figures_of_torch(r);
}

class FrameworkBridge : public ::testing::Test {
 protected:
  void SetUp() override {
    if (first_python().empty()) GTEST_SKIP() << "no CPython 3.10-3.13 found (tests/test_pythons.cmake)";
  }
  Sandbox box;
};

// The fake has what the bridge checks, at the places torch 2.11's headers put them.
TEST(FakeTorch, HasTorch211sSlotTypeAndSoname) {
  void* lib = dlopen((fake_torch_dir() + "/torch/lib/libc10_cuda.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto slot = reinterpret_cast<int (*)()>(dlsym(lib, "fake_torch_attach_slot"));
  ASSERT_NE(slot, nullptr);
  const shim::TorchLayout* layout = shim::find_torch_layout(2, 11);
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(slot(), 44);
  EXPECT_EQ(static_cast<unsigned>(slot()), layout->attach_slot);
  auto* object = static_cast<std::atomic<void*>*>(dlsym(lib, shim::kAllocatorSymbol));
  ASSERT_NE(object, nullptr);
  ASSERT_NE(object->load(), nullptr);
  void** vtable = *static_cast<void***>(object->load());
  EXPECT_STREQ(static_cast<const std::type_info*>(vtable[-1])->name(), shim::kNativeAllocatorType);
  void* by_soname = dlopen(shim::kAllocatorLibrary, RTLD_LAZY | RTLD_NOLOAD);
  EXPECT_EQ(by_soname, lib);
  if (by_soname != nullptr) dlclose(by_soname);
}

// A directory holding the program's own sitecustomize.py, for its PYTHONPATH.
std::string user_site(const Sandbox& box, const std::string& text) {
  const std::string dir = box.dir() + "/user";
  mkdir(dir.c_str(), 0700);
  std::ofstream(dir + "/sitecustomize.py") << text << "\n";
  return dir;
}

constexpr const char* kFailingSite = "raise ValueError('the user sitecustomize fails')";

class FrameworkBridgeOnEachPython : public ::testing::TestWithParam<std::string> {
 protected:
  Sandbox box;
};

TEST_P(FrameworkBridgeOnEachPython, AttachesAndReportsTorchsOwnFigures) {
  const TorchRun r = run_torch(box, "basic", {.python = GetParam()});
  expect_attached(r);
  const auto& s = r.summary;
  const uint64_t tensors = 3 * kMiB + 100'000;
  EXPECT_EQ(fake(r, "requested_bytes.all.current"), tensors);
  EXPECT_EQ(fake(r, "reserved_bytes.all.peak"), 46 * kMiB);  // 2 + 20 + 24 MiB segments
  EXPECT_EQ(fake(r, "reserved_bytes.all.current"), 22 * kMiB);
  EXPECT_EQ(s["framework"]["tensors_at_exit"], (nlohmann::json{{"count", 2}, {"bytes", tensors}}));
  EXPECT_EQ(s["framework"]["cached_at_exit"], (nlohmann::json{{"count", 2}, {"bytes", 22 * kMiB}}));
  // The leaks are the tensors; the segments are the cache.
  EXPECT_EQ(s["live_at_exit"], (nlohmann::json{{"count", 2}, {"bytes", tensors}})) << s.dump(1);
  const auto& f = s["devices"][0]["framework"];
  EXPECT_EQ(f["pending_free_bytes"]["current"], 0);
  EXPECT_EQ(f["outside_bytes"], counter(0, 0));  // each segment's cuMemAlloc was paired with its SEGMENT_ALLOC
  EXPECT_EQ(f["tensor_allocs"], 5);              // the self-check's probe, a, b, c, d
  EXPECT_EQ(f["tensor_frees"], 3);               // the probe, a, c
  EXPECT_EQ(f["segment_allocs"], 3);
  EXPECT_EQ(f["segment_frees"], 1);
  EXPECT_TRUE(lines_with(r.result.err, "PyTorch").empty()) << r.result.err;
}

TEST_P(FrameworkBridgeOnEachPython, ChainsToTheProgramsOwnSitecustomize) {
  const TorchRun r = run_torch(
      box, "basic",
      {.env = {{"PYTHONPATH", user_site(box, "print('user sitecustomize ran', flush=True)")}}, .python = GetParam()});
  expect_attached(r);
  EXPECT_EQ(r.result.out.rfind("user sitecustomize ran\n", 0), 0u) << r.result.out;
}

TEST_P(FrameworkBridgeOnEachPython, AFailingSitecustomizeIsReportedAsPythonDoes) {
  const TorchRun r =
      run_torch(box, "basic", {.env = {{"PYTHONPATH", user_site(box, kFailingSite)}}, .python = GetParam()});
  expect_attached(r);
  EXPECT_FALSE(lines_with(r.result.err, "Error in sitecustomize; set PYTHONVERBOSE for traceback:").empty())
      << r.result.err;
  EXPECT_EQ(lines_with(r.result.err, "ValueError: the user sitecustomize fails").size(), 1u) << r.result.err;
}

TEST_P(FrameworkBridgeOnEachPython, AFailingSitecustomizeIsReportedOnce) {
  const TorchRun r =
      run_torch(box, "basic", {.env = {{"PYTHONPATH", user_site(box, kFailingSite)}}, .python = GetParam()});
  expect_attached(r);
  EXPECT_EQ(lines_with(r.result.err, "Error in sitecustomize; set PYTHONVERBOSE for traceback:").size(), 1u)
      << r.result.err;
  EXPECT_TRUE(lines_with(r.result.err, "KeyError").empty()) << r.result.err;
}

INSTANTIATE_TEST_SUITE_P(Pythons, FrameworkBridgeOnEachPython, ::testing::ValuesIn(test_pythons()), interpreter_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FrameworkBridgeOnEachPython);

TEST_F(FrameworkBridge, AttachesThroughTheDocumentedPreloadRoute) {
  const TorchRun r = run_torch(box, "basic", {.route = Route::Preload});
  expect_attached(r);
  EXPECT_EQ(r.summary["framework"]["tensors_at_exit"]["count"], 2);
}

// A CUDA graph's private pool (torch.cuda.graph allocates from one while it captures): its segments
// and tensors are counted apart, by pool id, and inside the framework's totals.
TEST_F(FrameworkBridge, PrivatePoolsAreCountedPerPool) {
  const TorchRun r = run_torch(box, "private_pools");
  expect_attached(r);
  const auto& f = r.summary["devices"][0]["framework"];
  ASSERT_TRUE(f.contains("private_pools")) << f.dump(1);
  ASSERT_EQ(f["private_pools"].size(), 1u);
  const auto& p = f["private_pools"][0];
  EXPECT_EQ(p["pool"], "0,1");
  EXPECT_EQ(p["reserved"], counter(22 * kMiB, 22 * kMiB));
  EXPECT_EQ(p["allocated"], counter(4 * kMiB, 4 * kMiB + 1000));
  const RunResult check = run_tool({"check", r.dir, "--max-graph-memory", "21MiB"});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_NE(check.out.find("CUDA graph memory 22.00 MiB"), std::string::npos) << check.out;
  EXPECT_EQ(run_tool({"check", r.dir, "--max-graph-memory", "22MiB"}).exit_code, 0);
  const RunResult report = run_tool({"report", r.dir});
  EXPECT_NE(report.out.find("1 pool reserve 22.00 MiB at exit, 22.00 MiB at their peaks; 4.00 MiB of it in live "
                            "tensors"),
            std::string::npos)
      << report.out;
}

// record_stream: the program's free is requested at once, completes once the other stream's work is
// done; until then the tensor's bytes are still allocated (as torch counts them) and pending.
TEST_F(FrameworkBridge, StreamUsedTensorsStayPendingUntilTheirFreeCompletes) {
  const TorchRun r = run_torch(box, "record_stream");
  expect_attached(r);
  const auto& f = r.summary["devices"][0]["framework"];
  EXPECT_EQ(f["pending_free_bytes"], counter(9000, 15000));
  EXPECT_EQ(fake(r, "requested_bytes.all.current"), 7000u + 9000u);
  EXPECT_EQ(fake(r, "requested_bytes.all.peak"), 15000u + 7000u);  // x still counts until its free completes
  // z's free never completed: it is still a tensor at exit, like y.
  EXPECT_EQ(r.summary["framework"]["tensors_at_exit"], (nlohmann::json{{"count", 2}, {"bytes", 16000}}));
}

// PyTorch records FREE_REQUESTED and, unless the block is in use on another stream, FREE_COMPLETED
// right after it: such a free never waited, and the pending peak must not count it.
TEST_F(FrameworkBridge, PendingFreePeakCountsOnlyFreesThatWaited) {
  const TorchRun r = run_torch(box, "basic");
  expect_attached(r);
  EXPECT_EQ(r.summary["devices"][0]["framework"]["pending_free_bytes"], counter(0, 0));
}

// Attached after tensors existed (by hand, under python -S): the seed from torch.cuda.memory_snapshot()
// brings the segments, the live tensors and a pending free, so the figures still equal torch's.
TEST_F(FrameworkBridge, SeedsWhatExistedBeforeALateAttach) {
  const TorchRun r = run_torch(box, "late", {.route = Route::Preload, .python_flags = {"-S"}});
  expect_attached(r);
  const auto& f = r.summary["devices"][0]["framework"];
  EXPECT_EQ(f["pending_free_bytes"]["current"], 0);
  EXPECT_EQ(fake(r, "requested_bytes.all.peak"), 1000 + 5 * kMiB + 3000 + 6 * kMiB);
  EXPECT_EQ(r.summary["framework"]["tensors_at_exit"], (nlohmann::json{{"count", 2}, {"bytes", 1000 + 5 * kMiB}}));
  EXPECT_EQ(r.summary["live_at_exit"]["count"], 2);
}

// Each tensor allocation's frames in the trace, by kind: Python frames ("py:<id>") and native ones
// (return addresses, "0x...") as attribution.jsonl spells them.
struct TensorFrames {
  size_t tensors = 0, native = 0, python = 0;
};
TensorFrames tensor_frames(const std::string& dir) {
  std::map<uint32_t, nlohmann::json> stacks;
  std::ifstream in(dir + "/attribution.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("type", "") == "stack") stacks[j["id"].get<uint32_t>()] = j;
  }
  reader::TraceReader trace;
  EXPECT_TRUE(trace.open(dir + "/trace.gmpt")) << trace.error();
  TensorFrames t;
  Event e;
  while (trace.next(e)) {
    if (e.op != Op::TensorAlloc) continue;
    ++t.tensors;
    if (e.stack_id == 0 || stacks.count(e.stack_id) == 0) continue;
    for (const auto& f : stacks[e.stack_id]["frames"]) {
      const std::string s = f;
      ++(s.rfind("py:", 0) == 0 ? t.python : t.native);
    }
  }
  return t;
}

// PyTorch's own default for its memory history: a tensor carries its Python frames, not the native
// frames of PyTorch's dispatcher and allocator under them; GPUMEMPROF_TENSOR_STACKS=all adds those.
TEST_F(FrameworkBridge, TensorsCarryPythonFramesOnlyUnlessAllAreAskedFor) {
  const TorchRun python = run_torch(box, "basic");
  expect_attached(python);
  const TensorFrames p = tensor_frames(python.dir);
  EXPECT_GT(p.tensors, 0u);
  EXPECT_GE(p.python, p.tensors);  // at least the allocating line of each
  EXPECT_EQ(p.native, 0u);
  Sandbox other;
  const TorchRun all = run_torch(other, "basic", {.env = {{"GPUMEMPROF_TENSOR_STACKS", "all"}}});
  expect_attached(all);
  const TensorFrames a = tensor_frames(all.dir);
  EXPECT_EQ(a.tensors, p.tensors);
  EXPECT_EQ(a.python, p.python);
  EXPECT_GE(a.native, a.tensors);
  EXPECT_EQ(read_json_file(all.dir + "/manifest.json")["config"]["tensor_stacks"], "all");
}

// Allocations from three lines in turn: every tensor's innermost frame in the program is its own line
// (the shim's per-thread caches of frames and stacks must give exactly the shared tables' ids).
// Under PyTorch a range's driver-level bytes are the caching allocator's segments; with the bridge
// the ranges and marks also count the tensors the steps asked for.
TEST_F(FrameworkBridge, RangesAndMarksCountTensorsToo) {
  const TorchRun r = run_torch(box, "ranges");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  ASSERT_EQ(r.summary["framework"]["state"], "attached") << r.log;
  RunResult j = run_tool({"report", r.dir, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  const auto& step = doc["analysis"]["ranges"][0];
  ASSERT_EQ(step["name"], "step") << step.dump(1);
  EXPECT_EQ(step["calls"], 3);
  EXPECT_EQ(step["bytes_allocated"], 20 * kMiB) << "one segment, in the first step";
  EXPECT_EQ(step["tensors"]["bytes_allocated"], 3 * 8 * kMiB);
  EXPECT_EQ(step["tensors"]["allocations"], 12);
  EXPECT_EQ(step["tensors"]["peak_above_entry"], 8 * kMiB);
  EXPECT_EQ(step["tensors"]["net_change"], 0);
  const auto& marks = doc["analysis"]["marks"];
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[1]["tensors"]["allocated"], 3 * kMiB);
  EXPECT_EQ(marks[1]["tensors"]["growth"], 3 * kMiB);
  EXPECT_EQ(marks[1]["tensors"]["peak_since_previous"], 8 * kMiB);
  RunResult text = run_tool({"report", r.dir});
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(\n    name +calls .* tensors +tensor peak above\n)"))) << text.out;
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(\n    step +3 .* \+20\.00 MiB +24\.00 MiB +8\.00 MiB\n)")))
      << text.out;
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(\n    2 after .* 3\.00 MiB \+3\.00 MiB\n)"))) << text.out;
}

TEST_F(FrameworkBridge, EachTensorOfALoopNamesItsOwnLine) {
  const TorchRun r = run_torch(box, "sites");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  ASSERT_EQ(r.summary["framework"]["state"], "attached") << r.log;
  std::map<uint32_t, nlohmann::json> by_id;
  std::ifstream in(r.dir + "/attribution.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("id")) by_id[j["id"].get<uint32_t>()] = j;
  }
  std::map<uint64_t, int> want;  // size -> the line that allocates it
  std::ifstream src(std::string(GMP_SOURCE_DIR) + "/tests/fake_torch/torch_workload.py");
  int n = 0;
  for (std::string line; std::getline(src, line);) {
    ++n;
    for (uint64_t size : {100, 200, 300, 400, 500}) {
      if (line.find("# site " + std::to_string(size)) != std::string::npos) want[size] = n;
    }
  }
  ASSERT_EQ(want.size(), 5u);
  reader::TraceReader trace;
  ASSERT_TRUE(trace.open(r.dir + "/trace.gmpt")) << trace.error();
  std::map<uint64_t, int> seen;
  Event e;
  while (trace.next(e)) {
    if (e.op != Op::TensorAlloc || want.count(e.size) == 0) continue;
    ++seen[e.size];
    ASSERT_NE(by_id.count(e.stack_id), 0u) << e.size;
    int line = -1;  // of the innermost frame in the program, below the fake torch's own
    for (const auto& f : by_id[e.stack_id]["frames"]) {
      const std::string s = f;
      ASSERT_EQ(s.rfind("py:", 0), 0u) << s;
      const auto& frame = by_id[static_cast<uint32_t>(std::stoul(s.substr(3)))];
      if (frame["file"].get<std::string>().find("torch_workload.py") == std::string::npos) continue;
      line = frame["line"];
      break;
    }
    EXPECT_EQ(line, want[e.size]) << "tensor of " << e.size << " bytes, allocation " << seen[e.size];
  }
  EXPECT_EQ(seen, (std::map<uint64_t, int>{{100, 50}, {200, 50}, {300, 50}, {400, 25}, {500, 25}}));
}

// The seeded segments describe one instant: between two of them nothing was outside PyTorch.
TEST_F(FrameworkBridge, SeedingCountsNothingOutsideTorch) {
  const TorchRun r = run_torch(box, "late", {.route = Route::Preload, .python_flags = {"-S"}});
  expect_attached(r);
  EXPECT_EQ(r.summary["devices"][0]["framework"]["outside_bytes"], counter(0, 0));
}

// PyTorch's OOM: the allocator's OOM entry (device free bytes, the request), then the observer's
// figures (capacity, torch's allocated and reserved), both in the trace.
TEST_F(FrameworkBridge, OutOfMemoryRecordsTorchsFigures) {
  const TorchRun r = run_torch(box, "oom", {.env = {{"FAKE_CUDA_CAPACITY", "64M"}}});
  expect_attached(r);
  EXPECT_NE(r.result.out.find("caught: CUDA out of memory. Tried to allocate 41943040 bytes"), std::string::npos);
  EXPECT_EQ(r.summary["devices"][0]["framework"]["ooms"], 1);
  const RunResult x = run_tool({"export", r.dir, "--format", "jsonl"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  std::vector<nlohmann::json> oom, figures;
  std::stringstream in(x.out);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    if (j.value("op", "") == "framework_oom") oom.push_back(j);
    if (j.value("op", "") == "framework_oom_figures") figures.push_back(j);
  }
  // The cache (the self-check's small segment) was given back before the second try: 40 MiB held.
  ASSERT_EQ(oom.size(), 1u) << x.out.substr(0, 2000);
  EXPECT_EQ(oom[0]["size"], 40 * kMiB);
  EXPECT_EQ(oom[0]["value"], 24 * kMiB);
  ASSERT_EQ(figures.size(), 1u);
  EXPECT_EQ(figures[0]["device"], 0);
  EXPECT_EQ(figures[0]["size"], 40 * kMiB);
  EXPECT_EQ(figures[0]["value"], 24 * kMiB);
  EXPECT_EQ(figures[0]["stream"], 64 * kMiB);
  EXPECT_EQ(figures[0]["object"], 40 * kMiB);
  EXPECT_EQ(figures[0]["address"], 40 * kMiB);
  // The report says what each count counts: the driver's refusals (the call and PyTorch's retry),
  // the exception the program caught, the bundles, and no recovery (nothing of 40 MiB was
  // allocated after, though the program went on).
  const RunResult report = run_tool({"report", r.dir});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("OOM: 2 allocations refused by the driver for lack of memory\n"
                            "    PyTorch raised 1 OutOfMemoryError\n"
                            "    2 bundles written\n"
                            "    0 episodes recovered by a later allocation of the failed size\n"),
            std::string::npos)
      << report.out;
}

TEST_F(FrameworkBridge, AProgramThatNeverUsesCudaWritesNothing) {
  const TorchRun r = run_torch(box, "cpu_only");
  EXPECT_EQ(r.result.exit_code, 0) << r.result.err;
  EXPECT_EQ(r.result.out, "2.11.0 False\n");
  EXPECT_TRUE(r.dir.empty());
}

TEST_F(FrameworkBridge, UnverifiedVersionsAttachOnlyWhenAskedTo) {
  const TorchRun r =
      run_torch(box, "basic", {.env = {{"FAKE_TORCH_VERSION", "2.10.0"}, {"GPUMEMPROF_FRAMEWORK", "unverified"}}});
  expect_attached(r, "2.10.0");
}

TEST_F(FrameworkBridge, ABadSettingSaysSoOnceAndTheDefaultApplies) {
  const TorchRun r = run_torch(box, "basic", {.env = {{"GPUMEMPROF_FRAMEWORK", "sometimes"}}});
  expect_attached(r);
  EXPECT_EQ(lines_with(r.result.err, "GPUMEMPROF_FRAMEWORK").size(), 1u) << r.result.err;
}

// Every way of not attaching: one log line (a warning, or information where it is expected), the
// summary says why, and the driver level records exactly as without the bridge.
struct Refusal {
  const char* name;
  std::map<std::string, std::string> env;
  const char* state;
  const char* refusal;
  const char* level;   // of the log line
  const char* detail;  // in the log line
  const char* version = "2.11.0";
};

class FrameworkRefusals : public ::testing::TestWithParam<Refusal> {
 protected:
  void SetUp() override {
    if (first_python().empty()) GTEST_SKIP() << "no CPython 3.10-3.13 found (tests/test_pythons.cmake)";
  }
  Sandbox box;
};

TEST_P(FrameworkRefusals, LeaveTheDriverLevelIntactAndSaySoOnce) {
  const Refusal& p = GetParam();
  auto env = p.env;
  env["GPUMEMPROF_LOG_LEVEL"] = "info";
  const TorchRun r = run_torch(box, "basic", {.env = env});
  EXPECT_EQ(r.result.exit_code, 0) << r.result.err;
  ASSERT_FALSE(r.dir.empty()) << r.result.err;
  const auto& s = r.summary;
  EXPECT_EQ(s["framework"]["state"], p.state) << s["framework"].dump();
  EXPECT_EQ(s["framework"]["refusal"], p.refusal);
  EXPECT_EQ(s["framework"]["version"], p.version);
  EXPECT_EQ(s["framework"]["cached_at_exit"]["count"], 0);
  EXPECT_FALSE(s["devices"][0].contains("framework")) << s["devices"][0].dump(1);
  // At driver level every segment is a live allocation, the fake torch's reserved bytes.
  EXPECT_EQ(s["devices"][0]["reserved_bytes"],
            counter(fake(r, "reserved_bytes.all.current"), fake(r, "reserved_bytes.all.peak")));
  EXPECT_EQ(s["live_at_exit"],
            (nlohmann::json{{"count", r.fake["segments"]}, {"bytes", fake(r, "reserved_bytes.all.current")}}));
  const auto lines = lines_with(r.log, "PyTorch tensor-level recording");
  ASSERT_EQ(lines.size(), 1u) << r.log;
  EXPECT_NE(lines[0].find(std::string(" ") + p.level + " "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(p.detail), std::string::npos) << lines[0];
}

INSTANTIATE_TEST_SUITE_P(
    Ways, FrameworkRefusals,
    ::testing::Values(
        Refusal{"Torch23",
                {{"FAKE_TORCH_VERSION", "2.3.0"}},
                "refused",
                "unknown_version",
                "warning",
                "torch 2.3.0 has no known layout",
                "2.3.0"},
        Refusal{"Torch212",
                {{"FAKE_TORCH_VERSION", "2.12.0"}},
                "refused",
                "unknown_version",
                "warning",
                "torch 2.12.0 has no known layout",
                "2.12.0"},
        Refusal{"UncheckedTorch210",
                {{"FAKE_TORCH_VERSION", "2.10.0"}},
                "refused",
                "unknown_version",
                "warning",
                "(GPUMEMPROF_FRAMEWORK=unverified uses it)",
                "2.10.0"},
        // 2.8's slot (38) is another method of this allocator: the self-check finds no tracker.
        Refusal{"WrongSlotOfUnverifiedTorch28",
                {{"FAKE_TORCH_VERSION", "2.8.0"}, {"GPUMEMPROF_FRAMEWORK", "unverified"}},
                "detached",
                "self_check_failed",
                "warning",
                "did not arrive as expected",
                "2.8.0"},
        Refusal{"CudaMallocAsyncBackend",
                {{"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"}},
                "refused",
                "other_backend",
                "info",
                "allocator backend cudaMallocAsync"},
        Refusal{"AnotherAllocatorType",
                {{"FAKE_TORCH_ALLOCATOR", "async"}},
                "refused",
                "other_backend",
                "warning",
                "the allocator is N3c104cuda20CUDACachingAllocator15CudaMallocAsync24CudaMallocAsyncAllocatorE"},
        Refusal{"NoAllocatorObject",
                {{"FAKE_TORCH_ALLOCATOR", "none"}},
                "refused",
                "no_allocator",
                "warning",
                "libc10_cuda.so has no allocator object"},
        Refusal{"FailedSelfCheck",
                {{"FAKE_TORCH_LAYOUT", "wrong"}},
                "detached",
                "self_check_failed",
                "warning",
                "did not arrive as expected"},
        Refusal{
            "TurnedOff", {{"GPUMEMPROF_FRAMEWORK", "off"}}, "refused", "disabled", "info", "GPUMEMPROF_FRAMEWORK=off"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gmp::test
