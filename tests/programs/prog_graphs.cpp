// Stream capture and CUDA graph memory, reached as the CUDA runtime reaches the driver (dlopen, then
// cuGetProcAddress for every entry point). Each step checks the driver's result: a capture the
// profiler invalidated makes the program fail, as it would a real one.
//
//   prog_graphs [global|thread_local|relaxed ...] [explicit] [leak] [trim] [hold]
// capture modes: capture allocAsync(256 MiB) + memset + freeAsync and allocAsync(64 MiB) outliving
//   the graph, while a second thread allocates and synchronizes on its own stream in relaxed mode;
//   launch 5 times, freeing the 64 MiB outside the graph (cuMemFreeAsync) after each launch.
// explicit: cuGraphAddMemAllocNode(32 MiB) + cuGraphAddMemFreeNode, and a 16 MiB allocation node
//   without a free, instantiated with AUTO_FREE_ON_LAUNCH and launched 3 times; the last 16 MiB is
//   freed with cuMemFree unless `leak` leaves it live at exit.
// hold: each capture stays open 300 ms after the other thread's allocation (time for the profiler's
//   own thread to act on it, e.g. the watchdog's trim).
// Prints one JSON line: the driver's graph memory attributes at the end and what the program did.
#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void* g_lib = nullptr;
decltype(&cuGetProcAddress_v2) g_resolve = nullptr;

template <typename F>
F get(const char* name) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult q;
  if (g_resolve(name, &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || p == nullptr) {
    std::fprintf(stderr, "prog_graphs: cannot resolve %s\n", name);
    std::exit(3);
  }
  return reinterpret_cast<F>(p);
}
#define GET(name) auto name##_ = get<decltype(&name)>(#name)

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  std::fprintf(stderr, "prog_graphs: %s returned %d\n", what, static_cast<int>(r));
  std::exit(1);
}
#define CK(call) check(call, #call)

}  // namespace

int main(int argc, char** argv) {
  g_lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (g_lib == nullptr) return 3;
  g_resolve = reinterpret_cast<decltype(g_resolve)>(dlsym(g_lib, "cuGetProcAddress_v2"));
  if (g_resolve == nullptr) return 3;
  GET(cuInit);
  GET(cuDeviceGet);
  GET(cuDevicePrimaryCtxRetain);
  GET(cuCtxSetCurrent);
  GET(cuStreamCreate);
  GET(cuStreamSynchronize);
  GET(cuMemAllocAsync);
  GET(cuMemFreeAsync);
  GET(cuMemFree);
  GET(cuMemsetD8Async);
  GET(cuStreamBeginCapture);
  GET(cuStreamEndCapture);
  GET(cuThreadExchangeStreamCaptureMode);
  // By name, "cuGraphInstantiate" is still the old five-argument ABI (cuGetProcAddress hands out
  // cuGraphInstantiate_v2, as on driver 580); cuda.h's macro means cuGraphInstantiateWithFlags.
  GET(cuGraphInstantiateWithFlags);
  GET(cuGraphLaunch);
  GET(cuGraphExecDestroy);
  GET(cuGraphDestroy);
  GET(cuGraphCreate);
  GET(cuGraphAddMemAllocNode);
  GET(cuGraphAddMemFreeNode);
  GET(cuDeviceGetGraphMemAttribute);
  GET(cuDeviceGraphMemTrim);

  std::vector<std::string> words(argv + 1, argv + argc);
  auto has = [&](const char* w) {
    for (const auto& x : words) {
      if (x == w) return true;
    }
    return false;
  };

  CK(cuInit_(0));
  CUdevice dev;
  CK(cuDeviceGet_(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain_(&ctx, dev));
  CK(cuCtxSetCurrent_(ctx));
  CUstream s, other;
  CK(cuStreamCreate_(&s, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate_(&other, CU_STREAM_NON_BLOCKING));
  const size_t MiB = size_t{1} << 20;
  int captures = 0, launches = 0, explicit_launches = 0;

  const struct {
    const char* word;
    CUstreamCaptureMode mode;
  } modes[] = {{"global", CU_STREAM_CAPTURE_MODE_GLOBAL},
               {"thread_local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL},
               {"relaxed", CU_STREAM_CAPTURE_MODE_RELAXED}};
  for (const auto& m : modes) {
    if (!has(m.word)) continue;
    CK(cuStreamBeginCapture_(s, m.mode));
    // Another thread works on its own stream while the capture is open, in relaxed mode as the
    // rules allow; what the profiler does for it must not touch the capture either.
    std::thread worker([&] {
      CK(cuCtxSetCurrent_(ctx));
      CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
      CK(cuThreadExchangeStreamCaptureMode_(&relaxed));
      CUdeviceptr p = 0;
      CK(cuMemAllocAsync_(&p, 8 * MiB, other));
      CK(cuMemFreeAsync_(p, other));
      CK(cuStreamSynchronize_(other));
      CK(cuThreadExchangeStreamCaptureMode_(&relaxed));
    });
    CUdeviceptr a = 0, b = 0;
    CK(cuMemAllocAsync_(&a, 256 * MiB, s));
    CK(cuMemsetD8Async_(a, 1, 256 * MiB, s));
    CK(cuMemFreeAsync_(a, s));
    CK(cuMemAllocAsync_(&b, 64 * MiB, s));
    worker.join();
    if (has("hold")) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CUgraph g = nullptr;
    CK(cuStreamEndCapture_(s, &g));
    ++captures;
    CUgraphExec x;
    CK(cuGraphInstantiateWithFlags_(&x, g, 0));
    for (int i = 0; i < 5; ++i) {
      CK(cuGraphLaunch_(x, s));
      CK(cuStreamSynchronize_(s));
      CK(cuMemFreeAsync_(b, other));  // the graph's allocation, freed outside the graph
      CK(cuStreamSynchronize_(other));
      ++launches;
    }
    CK(cuGraphExecDestroy_(x));
    CK(cuGraphDestroy_(g));
  }

  if (has("explicit")) {
    CUgraph g;
    CK(cuGraphCreate_(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p{};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = dev;
    p.bytesize = 32 * MiB;
    CUgraphNode alloc32, free32, alloc16;
    CK(cuGraphAddMemAllocNode_(&alloc32, g, nullptr, 0, &p));
    CK(cuGraphAddMemFreeNode_(&free32, g, &alloc32, 1, p.dptr));
    CUDA_MEM_ALLOC_NODE_PARAMS q = p;
    q.bytesize = 16 * MiB;
    q.dptr = 0;
    CK(cuGraphAddMemAllocNode_(&alloc16, g, &free32, 1, &q));
    CUgraphExec x;
    CK(cuGraphInstantiateWithFlags_(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    for (int i = 0; i < 3; ++i) {
      CK(cuGraphLaunch_(x, s));  // each launch frees the last launch's 16 MiB first
      CK(cuStreamSynchronize_(s));
      ++explicit_launches;
    }
    if (!has("leak")) CK(cuMemFree_(q.dptr));
    CK(cuGraphExecDestroy_(x));
    CK(cuGraphDestroy_(g));
  }
  if (has("trim")) CK(cuDeviceGraphMemTrim_(dev));

  cuuint64_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  CK(cuDeviceGetGraphMemAttribute_(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved));
  CK(cuDeviceGetGraphMemAttribute_(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &reserved_high));
  CK(cuDeviceGetGraphMemAttribute_(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
  CK(cuDeviceGetGraphMemAttribute_(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &used_high));
  std::printf(
      "{\"captures\":%d,\"launches\":%d,\"explicit_launches\":%d,\"reserved\":%llu,\"reserved_high\":%llu,"
      "\"used\":%llu,\"used_high\":%llu}\n",
      captures, launches, explicit_launches, (unsigned long long)reserved, (unsigned long long)reserved_high,
      (unsigned long long)used, (unsigned long long)used_high);
  return 0;
}
