// The interposition rules of docs/design.md §Interposition rules, checked from the outside.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>

#include "harness.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

std::string command_output(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

std::set<std::string> words(const std::string& s) {
  std::set<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

TEST(Interposition, DlsymForwardsForeignLookupsAsTheCaller) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_probe")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["next"], nlohmann::json({2, 2}));  // RTLD_NEXT relative to probe_first, twice
  EXPECT_EQ(j["look_alike"], 4242);             // a cu* name that is not the driver's stays theirs
  EXPECT_EQ(j["blas"], 7);
  EXPECT_EQ(j["missing_is_null"], true);
  EXPECT_TRUE(box.run_dirs().empty());
}

TEST(Interposition, ExportsOnlyInterposedSymbolsAndNeedsOnlyLibc) {
  const auto exported = words(command_output("nm -D --defined-only " + Paths::shim() + " | awk '{print $3}'"));
  const std::set<std::string> expected = {
      "dlsym", "dlclose", "execve", "execv", "execvp", "execvpe", "fexecve", "execl", "execlp", "execle",
      "_exit", "_Exit", "quick_exit", "exit", "__libc_start_main",
      "cuGetProcAddress", "cuGetProcAddress_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocPitch_v2",
      "cuMemAllocManaged", "cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync",
      "cuMemAllocFromPoolAsync_ptsz", "cuMemFreeAsync", "cuMemFreeAsync_ptsz", "cuMemPoolCreate",
      "cuMemPoolDestroy", "cuMemPoolTrimTo", "cuDeviceSetMemPool", "cuMemCreate", "cuMemRelease", "cuMemMap",
      "cuMemUnmap", "cuArrayCreate_v2", "cuArray3DCreate_v2", "cuArrayDestroy", "cuMipmappedArrayCreate",
      "cuMipmappedArrayDestroy", "cuMemHostAlloc", "cuMemAllocHost_v2", "cuMemFreeHost", "cuStreamSynchronize",
      "cuStreamSynchronize_ptsz", "cuCtxSynchronize", "cuCtxSynchronize_v2", "cuEventSynchronize",
      "cuMemGetInfo_v2", "cuMemGetInfo", "cuDeviceTotalMem_v2", "cuDeviceTotalMem", "nvmlDeviceGetMemoryInfo",
      "nvmlDeviceGetMemoryInfo_v2",
      "cuStreamBeginCapture", "cuStreamBeginCapture_ptsz", "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz",
      "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz", "cuStreamEndCapture",
      "cuStreamEndCapture_ptsz", "cuGraphAddMemAllocNode", "cuGraphAddMemFreeNode", "cuGraphAddNode",
      "cuGraphAddNode_v2", "cuGraphInstantiate", "cuGraphInstantiate_v2", "cuGraphInstantiateWithFlags",
      "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz",
      "cuGraphUpload", "cuGraphUpload_ptsz", "cuGraphExecDestroy", "cuGraphDestroy", "cuDeviceGraphMemTrim",
      "cuDeviceSetGraphMemAttribute",
      "gpumemprof_mark", "gpumemprof_range_push", "gpumemprof_range_pop", "gpumemprof_pause", "gpumemprof_resume",
      "gpumemprof_device_stats", "gpumemprof_counts", "gpumemprof_reset_peaks", "gpumemprof_sync", "gpumemprof_recent",
      "gpumemprof_framework_attach", "gpumemprof_framework_seed", "gpumemprof_framework_self_check",
      "gpumemprof_framework_oom", "gpumemprof_framework_categories", "gpumemprof_framework_name",
      "gpumemprof_framework_label", "gpumemprof_framework_phase", "gpumemprof_framework_log",
      "InitializeInjectionNvtx2", "InitializeInjectionNvtxExtension",
      // AMD GPUs (docs/rocm.md)
      "hipMalloc", "hipExtMallocWithFlags", "hipMallocPitch", "hipMalloc3D", "hipFree", "hipMallocManaged",
      "hipHostMalloc", "hipMallocHost", "hipHostAlloc", "hipHostFree", "hipFreeHost", "hipMallocAsync",
      "hipMallocFromPoolAsync", "hipFreeAsync", "hipMemPoolCreate", "hipMemPoolDestroy", "hipMemCreate",
      "hipMemRelease", "hipMemMap", "hipMemUnmap", "hipMallocArray", "hipMalloc3DArray", "hipArrayCreate",
      "hipArray3DCreate", "hipFreeArray", "hipArrayDestroy", "hipGetProcAddress", "hsa_amd_memory_pool_allocate",
      "hsa_amd_memory_pool_free"};
  EXPECT_EQ(exported, expected);
  const auto needed = words(command_output("readelf -d " + Paths::shim() +
                                           " | sed -n 's/.*Shared library: \\[\\(.*\\)\\]/\\1/p'"));
  for (const auto& lib : needed) {
    EXPECT_TRUE(lib == "libc.so.6" || lib == "libm.so.6" || lib == "ld-linux-x86-64.so.2" || lib == "libdl.so.2" ||
                lib == "libpthread.so.0")
        << "unexpected dependency " << lib;
  }
}

// cudart-style callers take the per-thread-default-stream (_ptsz) pointers for stream-ordered
// calls; PyTorch-style callers ask for exact names. Each must reach the wrapper of its own ABI.
std::multiset<std::string> pool_alloc_apis(const std::string& program) {
  Sandbox box;
  RunResult r = box.run({Paths::bin(program)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  reader::TraceReader trace;
  EXPECT_TRUE(trace.open(box.only_run_dir() + "/trace.gmpt")) << trace.error();
  std::multiset<std::string> apis;
  Event e;
  while (trace.next(e)) {
    if (e.op == Op::Alloc && e.kind == Kind::Pool) apis.insert(std::string(api_name(e.api)));
  }
  return apis;
}

TEST(Interposition, PerThreadStreamPointersRouteToTheirOwnWrappers) {
  EXPECT_EQ(pool_alloc_apis("prog_cudart_style"),
            (std::multiset<std::string>{"cuMemAllocAsync_ptsz", "cuMemAllocAsync_ptsz",
                                        "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync_ptsz"}));
  EXPECT_EQ(pool_alloc_apis("prog_dlsym"),
            (std::multiset<std::string>{"cuMemAllocAsync", "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
                                        "cuMemAllocFromPoolAsync"}));
}

}  // namespace
}  // namespace gmp::test
