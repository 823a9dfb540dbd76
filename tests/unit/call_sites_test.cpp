// Call sites and flame graphs: which frame names a site, how stacks group under it, and the
// folded lines `gpumemprof export --format folded` writes, exactly.
#include <gtest/gtest.h>

#include "analysis_json.h"
#include "call_sites.h"
#include "flame.h"
#include "folded.h"
#include "run_analysis.h"
#include "synthetic_run.h"

namespace gmp::analysis {
namespace {

Frame native(const std::string& function, const std::string& module) {
  Frame f;
  f.function = function;
  f.module = module;
  return f;
}

Frame python(const std::string& function, const std::string& file, uint32_t line) {
  Frame f;
  f.python = true;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}

TEST(CallSites, TheSiteIsTheFirstPythonFrameElseTheFirstFrameOutsideTheRuntime) {
  const CallStack torch = {native("cudaMalloc", "/usr/lib/libcudart.so.12"),
                           native("c10::cuda::CUDACachingAllocator::malloc", "/site-packages/torch/lib/libc10_cuda.so"),
                           python("forward", "/work/model.py", 42), python("<module>", "/work/train.py", 3)};
  EXPECT_EQ(site_frame(torch), 2u);
  const CallStack cxx = {native("cuMemAlloc_v2", "/usr/lib/libcuda.so.1"), native("cudaMalloc", "/usr/lib/libcudart.so.12"),
                         native("Model::allocate()", "/work/app"), native("main", "/work/app"),
                         native("__libc_start_call_main", "/lib/libc.so.6")};
  EXPECT_EQ(site_frame(cxx), 2u);
  EXPECT_EQ(cxx[2].label(), "Model::allocate() [app]");
  const CallStack only_runtime = {native("cudaMalloc", "/usr/lib/libcudart.so.12"), native("start", "/lib/libc.so.6")};
  EXPECT_EQ(site_frame(only_runtime), 0u);
  Frame jit;
  jit.address = 0x7f00dead0000;
  const CallStack jitted = {native("cudaMalloc", "/usr/lib/libcudart.so.12"), jit};
  EXPECT_EQ(site_frame(jitted), 1u);
  EXPECT_EQ(jitted[1].label(), "0x7f00dead0000");
}

TEST(CallSites, UserCodeBeatsLibraryPython) {
  // model.cuda(): the innermost Python frames are torch/nn's; the site is train.py's line.
  const CallStack cuda = {native("c10::cuda::CUDACachingAllocator::malloc", "/v/lib/libc10_cuda.so"),
                          python("Module._apply.<locals>.convert", "/v/lib/python3.12/site-packages/torch/nn/modules/module.py", 1340),
                          python("Module._apply", "/v/lib/python3.12/site-packages/torch/nn/modules/module.py", 900),
                          python("build_model", "/work/train.py", 30), python("<module>", "/work/train.py", 80)};
  EXPECT_EQ(site_frame(cuda), 3u);
  // Only library and standard-library frames: the innermost Python frame.
  const CallStack library = {python("Thread.run", "/usr/lib/python3.12/threading.py", 1010),
                             python("_bootstrap", "<frozen importlib._bootstrap>", 1),
                             python("f", "/usr/lib/python3/dist-packages/pkg/m.py", 5)};
  EXPECT_EQ(site_frame(library), 0u);
  // No user code (a trainer's worker thread): the model library's line that called into torch, not
  // torch's own Python under it.
  const CallStack model_library = {
      native("c10::cuda::CUDACachingAllocator::malloc", "/v/lib/libc10_cuda.so"),
      python("silu", "/v/lib/python3.12/site-packages/torch/nn/functional.py", 2100),
      python("LlamaMLP.forward", "/v/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py", 200),
      python("Thread.run", "/usr/lib/python3.12/threading.py", 1010)};
  EXPECT_EQ(site_frame(model_library), 2u);
  // Only torch's own Python: its innermost frame.
  const CallStack only_torch = {python("silu", "/v/lib/python3.12/site-packages/torch/nn/functional.py", 2100),
                                python("f", "/v/lib/python3.12/dist-packages/jax/numpy.py", 5)};
  EXPECT_EQ(site_frame(only_torch), 0u);
  EXPECT_TRUE(is_library_python_file("/usr/lib/python3.11/threading.py"));
  EXPECT_TRUE(is_library_python_file("/home/u/.venv/lib/python3.12/site-packages/torch/optim/adam.py"));
  EXPECT_TRUE(is_library_python_file("<frozen runpy>"));
  EXPECT_FALSE(is_library_python_file("/home/u/project/train.py"));
  EXPECT_FALSE(is_library_python_file("/home/u/lib/python_tools/run.py"));
  EXPECT_FALSE(is_library_python_file("train.py"));
}

TEST(CallSites, OnlyRuntimeFramesNameTheFirstFrameworkFramePastTheAllocator) {
  // PyTorch's autograd thread: no Python, no user code; the operator that wanted the memory.
  const CallStack autograd = {native("", "/v/lib/libcudart.so.13"), native("cudaMalloc", "/v/lib/libcudart.so.13"),
                              native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(...)", "/v/lib/libc10_cuda.so"),
                              native("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(...)", "/v/lib/libc10_cuda.so"),
                              native("at::detail::empty_generic(...)", "/v/lib/libtorch_cpu.so"),
                              native("at::detail::empty_cuda(...)", "/v/lib/libtorch_cuda.so"),
                              native("at::cuda::setWorkspaceForHandle(cublasContext*, c10::cuda::CUDAStream)", "/v/lib/libtorch_cuda.so"),
                              native("at::native::structured_mm_out_cuda::impl(...)", "/v/lib/libtorch_cuda.so")};
  EXPECT_EQ(site_frame(autograd), 6u);
  // Framework frames without a name, or allocators only: the innermost frame, as before.
  const CallStack unnamed = {native("cudaMalloc", "/v/lib/libcudart.so.13"), native("", "/v/lib/libtorch_cuda.so"),
                             native("c10::Allocator::allocate", "/v/lib/libc10.so")};
  EXPECT_EQ(site_frame(unnamed), 0u);
  EXPECT_TRUE(is_allocation_machinery("at::native::empty_strided_cuda(...)"));
  EXPECT_TRUE(is_allocation_machinery("xla::BFCAllocator::AllocateRaw"));
  EXPECT_FALSE(is_allocation_machinery("at::native::addmm_out_cuda_impl"));
}

TEST(CallSites, StacksGroupUnderTheirSiteLabel) {
  StackTable stacks;
  // Two stacks reach the same Python line through different allocator paths; a third is elsewhere.
  stacks[1] = {native("a", "/lib/libc10_cuda.so"), python("forward", "/w/model.py", 42), python("main", "/w/train.py", 9)};
  stacks[2] = {native("b", "/lib/libc10_cuda.so"), python("forward", "/w/model.py", 42), python("main", "/w/train.py", 9)};
  stacks[3] = {python("backward", "/w/model.py", 50)};
  stacks[4] = {};
  std::unordered_map<uint32_t, Bytes> by_stack = {{1, {100, 1}}, {2, {300, 2}}, {3, {250, 1}}, {0, {50, 5}}, {4, {10, 1}},
                                                  {99, {20, 1}}};
  const auto sites = group_by_site(by_stack, stacks, 10);
  ASSERT_EQ(sites.size(), 5u);
  EXPECT_EQ(sites[0].label, "forward (model.py:42)");
  EXPECT_EQ(sites[0].bytes.bytes, 400u);
  EXPECT_EQ(sites[0].bytes.count, 3u);
  EXPECT_EQ(sites[0].stacks, 2u);
  EXPECT_EQ(sites[0].stack_id, 2u);  // the heavier one is shown
  EXPECT_EQ(sites[0].site_frame, 1u);
  EXPECT_EQ(sites[1].label, "backward (model.py:50)");
  EXPECT_EQ(sites[2].label, "(no stack captured)");
  EXPECT_EQ(sites[3].label, "(stack 99 not in attribution.jsonl)");
  EXPECT_EQ(sites[4].label, "(only profiler frames)");
  EXPECT_EQ(group_by_site(by_stack, stacks, 2).size(), 2u);
  const auto json = sites_json(sites, stacks);
  EXPECT_EQ(json[0]["site"], "forward (model.py:42)");
  EXPECT_EQ(json[0]["frames"].size(), 3u);
  EXPECT_EQ(json[0]["frames"][1]["file"], "/w/model.py");
  EXPECT_EQ(json[0]["frames"][1]["line"], 42);
  EXPECT_EQ(json[0]["frames"][0]["python"], false);
}

TEST(Flame, FoldedLinesAreOutermostFirstAndExact) {
  StackTable stacks;
  stacks[1] = {native("alloc_a", "/w/app"), native("chain_b", "/w/app"), native("main", "/w/app")};
  stacks[2] = {native("alloc_c", "/w/app"), native("chain_b", "/w/app"), native("main", "/w/app")};
  stacks[3] = {native("main", "/w/app")};  // main allocating itself: self weight on an inner node
  stacks[4] = {native("weird;name\nhere", "/w/app")};
  std::unordered_map<uint32_t, Bytes> by_stack = {{1, {300, 1}}, {2, {200, 2}}, {3, {7, 1}}, {0, {5, 1}}, {4, {1, 1}}};
  const FlameNode root = build_flame("GPU 0", by_stack, stacks);
  EXPECT_EQ(root.value, 513u);
  std::string out;
  append_folded(root, out);
  EXPECT_EQ(out,
            "GPU 0;(no stack captured) 5\n"
            "GPU 0;main 7\n"
            "GPU 0;main;chain_b;alloc_a 300\n"
            "GPU 0;main;chain_b;alloc_c 200\n"
            "GPU 0;weird:name here 1\n");
  const auto j = flame_json(root);
  EXPECT_EQ(j["name"], "GPU 0");
  EXPECT_EQ(j["value"], 513);
  EXPECT_EQ(j["children"][0]["name"], "main");  // biggest first
  EXPECT_EQ(j["children"][0]["value"], 507);
  EXPECT_EQ(j["children"][0]["children"][0]["children"][0]["name"], "alloc_a");
}

// The whole path on a synthetic run: two devices, stacks in files that do not exist (so frames are
// module+offset and the output cannot depend on the machine; "app" is a non-PIE executable, base
// 0, so its offsets are its addresses), Python frames, and a stackless allocation. Each device's
// flame is its own peak.
TEST(Flame, FoldedStacksOfARunAtEachDevicesPeak) {
  test::SyntheticRun run;
  run.line(R"({"type":"module","path":"/nonexistent/app","base":"0x0","start":"0x400000","end":"0x500000","build_id":""})")
      .line(R"({"type":"module","path":"/nonexistent/libgpumemprof.so","base":"0x7000000","start":"0x7000000","end":"0x7100000","build_id":""})")
      .line(R"({"type":"pyframe","id":5,"file":"/w/m.py","function":"f","line":7})")
      .line(R"({"type":"stack","id":1,"frames":["0x7000010","0x401000","0x402000"]})")
      .line(R"({"type":"stack","id":2,"frames":["0x7000010","0x401800","py:5"]})");
  run.alloc(10, 1, 0x1000, 100, 1, 0)
      .alloc(20, 1, 0x2000, 40, 2, 0)
      .alloc(30, 1, 0x3000, 60, 0, 0)
      .free(40, 1, 0x3000)     // device 0's peak (200) was before this
      .alloc(50, 1, 0x9000, 1000, 1, 1)
      .free(60, 1, 0x9000)
      .alloc(70, 1, 0xa000, 10, 2, 1);
  run.write(2);
  std::string error;
  auto a = analyze_run(run.dir(), Options{}, error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(folded_stacks(*a),
            "GPU 0;(no stack captured) 60\n"
            "GPU 0;app+0x402000;app+0x401000 100\n"
            "GPU 0;f (m.py:7);app+0x401800 40\n"
            "GPU 1;app+0x402000;app+0x401000 1000\n");
  ASSERT_EQ(a->devices.at(0).sites_at_peak.size(), 3u);
  EXPECT_EQ(a->devices.at(0).sites_at_peak[0].label, "app+0x401000 [file missing]");
  EXPECT_EQ(a->devices.at(0).sites_at_peak[2].label, "f (m.py:7)");
  ASSERT_EQ(a->leak_sites.size(), 2u);  // device 0's 140 and device 1's 10 are still live
  EXPECT_EQ(a->leak_sites[0].label, "app+0x401000 [file missing]");
  EXPECT_EQ(a->leak_sites[1].label, "f (m.py:7)");
  EXPECT_EQ(a->leak_sites[1].bytes.bytes, 50u);
  EXPECT_EQ(a->stack_events, 4u);
}

}  // namespace
}  // namespace gmp::analysis
