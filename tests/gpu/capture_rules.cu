// What the real driver does during a stream capture, measured (no profiler): which driver calls a
// profiler might make for itself invalidate a capture in progress (from the capturing thread and
// from another thread, in each capture mode), what relaxed mode changes, what those calls cost,
// and when the graph memory pool's attributes move (capture, instantiate, upload, launch, a free
// outside the graph, auto-free on launch, trim). Prints one JSON object per line; the GPU check
// keeps them as the facts docs/design.md §Stream capture rests on.
#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                               \
  do {                                                                      \
    CUresult r_ = (x);                                                      \
    if (r_ != CUDA_SUCCESS) {                                               \
      std::printf("{\"fatal\":\"%s\",\"result\":%d,\"line\":%d}\n", #x, r_, __LINE__); \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

static CUcontext g_ctx;
static CUdevice g_dev;
static CUstream g_cap, g_other;
static CUdeviceptr g_buf;
static CUmemoryPool g_pool;

// A worker thread that runs one job at a time, so "another thread" calls happen while the main
// thread's capture is open.
struct Worker {
  std::mutex m;
  std::condition_variable cv;
  std::function<void()> job;
  bool done = false, quit = false;
  std::thread t{[this] {
    cuCtxSetCurrent(g_ctx);
    std::unique_lock<std::mutex> l(m);
    for (;;) {
      cv.wait(l, [&] { return job || quit; });
      if (quit) return;
      job();
      job = nullptr;
      done = true;
      cv.notify_all();
    }
  }};
  void run(std::function<void()> f) {
    std::unique_lock<std::mutex> l(m);
    job = std::move(f);
    done = false;
    cv.notify_all();
    cv.wait(l, [&] { return done; });
  }
  ~Worker() {
    {
      std::lock_guard<std::mutex> l(m);
      quit = true;
      cv.notify_all();
    }
    t.join();
  }
};

enum Where { kOtherThread, kSameThread };

// Captures two memsets on g_cap in `mode`; between them `call` runs on this thread or the worker
// (in `worker_mode` there). Returns {call's result, end capture's result}.
static std::pair<CUresult, CUresult> under_capture(Worker& w, CUstreamCaptureMode mode, Where where,
                                                   CUstreamCaptureMode worker_mode,
                                                   const std::function<CUresult()>& call) {
  CK(cuStreamBeginCapture(g_cap, mode));
  cuMemsetD8Async(g_buf, 1, 4096, g_cap);
  CUresult called;
  if (where == kSameThread) {
    CUstreamCaptureMode m = worker_mode;
    cuThreadExchangeStreamCaptureMode(&m);
    called = call();
    cuThreadExchangeStreamCaptureMode(&m);
  } else {
    w.run([&] {
      CUstreamCaptureMode m = worker_mode;
      cuThreadExchangeStreamCaptureMode(&m);
      called = call();
      cuThreadExchangeStreamCaptureMode(&m);
    });
  }
  cuMemsetD8Async(g_buf, 2, 4096, g_cap);
  CUgraph g = nullptr;
  const CUresult end = cuStreamEndCapture(g_cap, &g);
  if (g) cuGraphDestroy(g);
  cuCtxSynchronize();  // clears nothing sticky; makes the next case independent
  return {called, end};
}

static const char* mode_name(CUstreamCaptureMode m) {
  return m == CU_STREAM_CAPTURE_MODE_GLOBAL ? "global" : m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "thread_local"
                                                                                                    : "relaxed";
}

static void rules(Worker& w) {
  using nvmlInit_t = int (*)();
  using nvmlHandle_t = int (*)(unsigned, void**);
  using nvmlMem_t = int (*)(void*, void*);
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  auto nvml_init = nvml ? reinterpret_cast<nvmlInit_t>(dlsym(nvml, "nvmlInit_v2")) : nullptr;
  auto nvml_handle = nvml ? reinterpret_cast<nvmlHandle_t>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2")) : nullptr;
  auto nvml_mem = nvml ? reinterpret_cast<nvmlMem_t>(dlsym(nvml, "nvmlDeviceGetMemoryInfo")) : nullptr;
  void* nvml_dev = nullptr;
  if (nvml_init && nvml_init() == 0 && nvml_handle) nvml_handle(0, &nvml_dev);

  CUarray arr;
  CUDA_ARRAY_DESCRIPTOR ad{};
  ad.Width = 64;
  ad.Height = 64;
  ad.Format = CU_AD_FORMAT_FLOAT;
  ad.NumChannels = 1;
  CK(cuArrayCreate(&arr, &ad));
  CUevent ev;
  CK(cuEventCreate(&ev, 0));

  struct Case {
    const char* name;
    std::function<CUresult()> f;
  };
  std::vector<Case> cases = {
      {"cuCtxGetDevice", [] { CUdevice d; return cuCtxGetDevice(&d); }},
      {"cuCtxGetCurrent", [] { CUcontext c; return cuCtxGetCurrent(&c); }},
      {"cuStreamGetDevice(capturing)", [] { CUdevice d; return cuStreamGetDevice(g_cap, &d); }},
      {"cuStreamGetDevice(other)", [] { CUdevice d; return cuStreamGetDevice(g_other, &d); }},
      {"cuStreamIsCapturing(capturing)", [] { CUstreamCaptureStatus s; return cuStreamIsCapturing(g_cap, &s); }},
      {"cuStreamIsCapturing(other)", [] { CUstreamCaptureStatus s; return cuStreamIsCapturing(g_other, &s); }},
      {"cuStreamIsCapturing(legacy)", [] { CUstreamCaptureStatus s; return cuStreamIsCapturing(CU_STREAM_LEGACY, &s); }},
      {"cuStreamGetCaptureInfo(capturing)",
       [] {
         CUstreamCaptureStatus s;
         cuuint64_t id;
         return cuStreamGetCaptureInfo(g_cap, &s, &id, nullptr, nullptr, nullptr, nullptr);
       }},
      {"cuDeviceGetMemPool", [] { CUmemoryPool p; return cuDeviceGetMemPool(&p, g_dev); }},
      {"cuMemPoolGetAttribute(reserved)",
       [] { cuuint64_t v; return cuMemPoolGetAttribute(g_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v); }},
      {"cuMemPoolGetAttribute(reserved_high)",
       [] { cuuint64_t v; return cuMemPoolGetAttribute(g_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v); }},
      {"cuMemPoolTrimTo", [] { return cuMemPoolTrimTo(g_pool, 1ull << 40); }},
      {"cuDeviceGetGraphMemAttribute(reserved)",
       [] { cuuint64_t v; return cuDeviceGetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v); }},
      {"cuDeviceGetGraphMemAttribute(used_high)",
       [] { cuuint64_t v; return cuDeviceGetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v); }},
      {"cuDeviceGraphMemTrim", [] { return cuDeviceGraphMemTrim(g_dev); }},
      {"cuMemGetInfo", [] { size_t f, t; return cuMemGetInfo(&f, &t); }},
      {"cuDeviceTotalMem", [] { size_t t; return cuDeviceTotalMem(&t, g_dev); }},
      {"cuDeviceGetName", [] { char n[64]; return cuDeviceGetName(n, 64, g_dev); }},
      {"cuDeviceGetCount", [] { int n; return cuDeviceGetCount(&n); }},
      {"cuDriverGetVersion", [] { int v; return cuDriverGetVersion(&v); }},
      {"cuDeviceGetPCIBusId", [] { char n[32]; return cuDeviceGetPCIBusId(n, 32, g_dev); }},
      {"cuPointerGetAttribute", [] { CUcontext c; return cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, g_buf); }},
      {"cuArrayGetMemoryRequirements",
       [arr] { CUDA_ARRAY_MEMORY_REQUIREMENTS r; return cuArrayGetMemoryRequirements(&r, arr, g_dev); }},
      {"cuMemAllocAsync(other)+free",
       [] {
         CUdeviceptr p;
         CUresult r = cuMemAllocAsync(&p, 1 << 20, g_other);
         if (r == CUDA_SUCCESS) cuMemFreeAsync(p, g_other);
         return r;
       }},
      {"cuMemAlloc+cuMemFree",
       [] {
         CUdeviceptr p;
         CUresult r = cuMemAlloc(&p, 1 << 20);
         if (r == CUDA_SUCCESS) cuMemFree(p);
         return r;
       }},
      {"cuStreamQuery(other)", [] { return cuStreamQuery(g_other); }},
      {"cuEventQuery", [ev] { return cuEventQuery(ev); }},
      {"cuStreamSynchronize(other)", [] { return cuStreamSynchronize(g_other); }},
      {"nvmlDeviceGetMemoryInfo",
       [&] {
         unsigned long long m[3];
         return nvml_mem && nvml_dev ? static_cast<CUresult>(nvml_mem(nvml_dev, m)) : CUDA_ERROR_NOT_FOUND;
       }},
  };
  const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                       CU_STREAM_CAPTURE_MODE_RELAXED};
  for (const Case& c : cases) {
    for (CUstreamCaptureMode capture_mode : modes) {
      for (Where where : {kSameThread, kOtherThread}) {
        for (CUstreamCaptureMode caller_mode : {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_RELAXED}) {
          auto [called, end] = under_capture(w, capture_mode, where, caller_mode, c.f);
          std::printf(
              "{\"rule\":\"%s\",\"capture_mode\":\"%s\",\"caller\":\"%s\",\"caller_mode\":\"%s\",\"call_result\":%d,"
              "\"end_capture\":%d}\n",
              c.name, mode_name(capture_mode), where == kSameThread ? "capturing_thread" : "other_thread",
              mode_name(caller_mode), called, end);
        }
      }
    }
  }
  cuArrayDestroy(arr);
  cuEventDestroy(ev);
}

template <typename F>
static double ns_per_call(F f, int n = 1000000) {
  for (int i = 0; i < 1000; ++i) f();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}

static void costs() {
  cuuint64_t v;
  CUstreamCaptureStatus s;
  cuuint64_t id;
  CUdevice d;
  const struct {
    const char* name;
    double ns;
  } rows[] = {
      {"cuThreadExchangeStreamCaptureMode pair",
       ns_per_call([] {
         CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
         cuThreadExchangeStreamCaptureMode(&m);
         cuThreadExchangeStreamCaptureMode(&m);
       })},
      {"cuStreamIsCapturing", ns_per_call([&] { cuStreamIsCapturing(g_other, &s); })},
      {"cuStreamGetCaptureInfo", ns_per_call([&] { cuStreamGetCaptureInfo(g_other, &s, &id, 0, 0, 0, 0); })},
      {"cuDeviceGetGraphMemAttribute",
       ns_per_call([&] { cuDeviceGetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v); })},
      {"cuMemPoolGetAttribute", ns_per_call([&] { cuMemPoolGetAttribute(g_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v); })},
      {"cuStreamGetDevice", ns_per_call([&] { cuStreamGetDevice(g_other, &d); })},
      {"cuCtxGetDevice", ns_per_call([&] { cuCtxGetDevice(&d); })},
  };
  for (const auto& r : rows) std::printf("{\"cost\":\"%s\",\"ns\":%.1f}\n", r.name, r.ns);
}

static void attrs(const char* when) {
  cuuint64_t u, uh, r, rh, pr;
  cuDeviceGetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u);
  cuDeviceGetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &uh);
  cuDeviceGetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r);
  cuDeviceGetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &rh);
  cuMemPoolGetAttribute(g_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &pr);
  size_t f, t;
  cuMemGetInfo(&f, &t);
  std::printf("{\"graph_mem\":\"%s\",\"used\":%llu,\"used_high\":%llu,\"reserved\":%llu,\"reserved_high\":%llu,"
              "\"default_pool_reserved\":%llu,\"device_free\":%zu}\n",
              when, (unsigned long long)u, (unsigned long long)uh, (unsigned long long)r, (unsigned long long)rh,
              (unsigned long long)pr, f);
}

static void graph_memory() {
  const size_t big = 256ull << 20, mid = 64ull << 20;
  attrs("start");
  // G1: alloc, use, free inside the graph.
  CUdeviceptr p1 = 0;
  CK(cuStreamBeginCapture(g_cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CK(cuMemAllocAsync(&p1, big, g_cap));
  CK(cuMemsetD8Async(p1, 3, big, g_cap));
  CK(cuMemFreeAsync(p1, g_cap));
  CUgraph g1;
  CK(cuStreamEndCapture(g_cap, &g1));
  std::printf("{\"g1_capture_address\":%llu}\n", (unsigned long long)p1);
  attrs("g1 captured");
  CUgraphExec e1;
  CK(cuGraphInstantiate(&e1, g1, 0));
  attrs("g1 instantiated");
  CK(cuGraphUpload(e1, g_cap));
  CK(cuStreamSynchronize(g_cap));
  attrs("g1 uploaded");
  for (int i = 0; i < 3; ++i) CK(cuGraphLaunch(e1, g_cap));
  attrs("g1 launched x3 (not synced)");
  CK(cuStreamSynchronize(g_cap));
  attrs("g1 launched x3 synced");
  // G2: an allocation that outlives its launch, freed outside the graph.
  CUdeviceptr p2 = 0;
  CK(cuStreamBeginCapture(g_cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CK(cuMemAllocAsync(&p2, mid, g_cap));
  CK(cuMemsetD8Async(p2, 3, mid, g_cap));
  CUgraph g2;
  CK(cuStreamEndCapture(g_cap, &g2));
  std::printf("{\"g2_capture_address\":%llu}\n", (unsigned long long)p2);
  CUgraphExec e2;
  CK(cuGraphInstantiate(&e2, g2, 0));
  CK(cuGraphLaunch(e2, g_cap));
  CK(cuStreamSynchronize(g_cap));
  attrs("g2 launched, allocation live");
  std::printf("{\"g2_relaunch_while_live\":%d}\n", cuGraphLaunch(e2, g_cap));
  cuStreamSynchronize(g_cap);
  CK(cuMemFreeAsync(p2, g_other));
  attrs("g2 allocation freed outside (not synced)");
  CK(cuStreamSynchronize(g_other));
  attrs("g2 allocation freed outside synced");
  CK(cuGraphLaunch(e2, g_cap));
  CK(cuStreamSynchronize(g_cap));
  attrs("g2 relaunched");
  CK(cuMemFree(p2));
  attrs("g2 allocation freed by cuMemFree");
  // G3: auto free on launch. A graph with memory nodes has one executable at a time.
  CK(cuGraphExecDestroy(e2));
  CUgraphExec e3;
  CK(cuGraphInstantiate(&e3, g2, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
  CK(cuGraphLaunch(e3, g_cap));
  CK(cuStreamSynchronize(g_cap));
  attrs("g3 (auto free) launch 1");
  std::printf("{\"g3_relaunch_while_live\":%d}\n", cuGraphLaunch(e3, g_cap));
  CK(cuStreamSynchronize(g_cap));
  attrs("g3 launch 2");
  // G4: explicit memory nodes.
  CUgraph g4;
  CK(cuGraphCreate(&g4, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS ap{};
  ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ap.poolProps.location.id = g_dev;
  ap.bytesize = 32ull << 20;
  CUgraphNode an, fn;
  CK(cuGraphAddMemAllocNode(&an, g4, nullptr, 0, &ap));
  CK(cuGraphAddMemFreeNode(&fn, g4, &an, 1, ap.dptr));
  std::printf("{\"g4_node_address\":%llu}\n", (unsigned long long)ap.dptr);
  CUgraphExec e4;
  CK(cuGraphInstantiate(&e4, g4, 0));
  CK(cuGraphLaunch(e4, g_cap));
  CK(cuStreamSynchronize(g_cap));
  attrs("g4 launched");
  CK(cuGraphExecDestroy(e1));
  attrs("e1 destroyed");
  CK(cuGraphExecDestroy(e4));
  CK(cuDeviceGraphMemTrim(g_dev));
  attrs("e1,e2,e4 destroyed, trimmed");
  // e3 still holds its live allocation
  CK(cuGraphExecDestroy(e3));
  CK(cuDeviceGraphMemTrim(g_dev));
  attrs("e3 destroyed, trimmed");
  cuuint64_t zero = 0;
  CK(cuDeviceSetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero));
  CK(cuDeviceSetGraphMemAttribute(g_dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
  attrs("highs reset");
  cuGraphDestroy(g1);
  cuGraphDestroy(g2);
  cuGraphDestroy(g4);
}

int main() {
  CK(cuInit(0));
  CK(cuDeviceGet(&g_dev, 0));
  CK(cuDevicePrimaryCtxRetain(&g_ctx, g_dev));
  CK(cuCtxSetCurrent(g_ctx));
  CK(cuStreamCreate(&g_cap, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&g_other, CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&g_buf, 1 << 20));
  CK(cuDeviceGetMemPool(&g_pool, g_dev));
  int v;
  cuDriverGetVersion(&v);
  std::printf("{\"driver_version\":%d}\n", v);
  graph_memory();
  costs();
  {
    Worker w;
    rules(w);
  }
  std::printf("{\"done\":true}\n");
  return 0;
}
