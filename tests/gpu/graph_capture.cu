// CUDA graphs with memory nodes, through the runtime API (static cudart), run by scripts/gpu_check.py
// without the profiler and then under it; the exit status and the checksum line must be the same.
//
//  1. One capture per mode (global, thread_local, relaxed) on a non-blocking stream:
//     cudaMallocAsync(256 MiB) -> fill -> sum -> cudaFreeAsync, launched 50 times. While each capture
//     is open a second thread makes calls that are legal during a capture (cudaStreamIsCapturing
//     and a kernel on its own stream): what the profiler's wrappers and threads do around them must
//     not invalidate the capture, in any mode.
//  2. A graph whose 64 MiB allocation outlives its launch: freed outside the graph with
//     cudaFreeAsync on another stream, relaunched (the driver refuses a relaunch while it is live),
//     then freed with cudaFree.
//  3. A 48 MiB outliving allocation in an exec instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch,
//     launched 3 times: each relaunch frees the previous launch's allocation first, so the live
//     bytes never exceed one allocation (a profiler that counted the new one before freeing the old
//     would peak at 96 MiB, above the 64 MiB of step 2), then freed with cudaFreeAsync.
//  4. An explicit graph (cudaGraphAddMemAllocNode, kernels, cudaGraphAddMemFreeNode) of 32 MiB,
//     uploaded once, launched 3 times on one stream and twice on another.
//  5. A fork/join capture: a second stream joins through an event, allocates 24 MiB and fills it;
//     the origin stream sums it after the join and frees it. Launched 10 times.
//  6. A 16 MiB outliving allocation launched once and never freed: live at exit on purpose.
//
// Ground truth: the bytes of graph allocations live outside their graph over time (steps 2, 3, 6:
// peak 64 MiB, 16 MiB at exit, 6 made live, 5 freed), the memory nodes of each graph as the graph
// itself reports them, launches/uploads/streams per graph, the driver's graph memory attributes at
// the end. Every exec is kept until exit so that each graph is still there when the summary is
// written.
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "graph_truth.h"
#include "truth.h"

constexpr uint64_t MiB = 1 << 20;
constexpr int kGrid = 1024, kBlock = 256;

__global__ void fill(uint32_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = (uint32_t)i * 2654435761u ^ seed;
}

// Integer sums: the same result whatever the order of the atomics, so the checksum is exact.
__global__ void sum(const uint32_t* p, size_t n, unsigned long long* acc) {
  unsigned long long s = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    s += p[i];
  for (int off = 16; off; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(acc, s);
}

static uint64_t expected_sum(size_t n, uint32_t seed) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += (uint32_t)i * 2654435761u ^ seed;
  return s;
}

// A thread that runs one job at a time, started (and bound to the device) before any capture, so
// that the jobs it runs while a capture is open are only the calls they are meant to be.
struct Worker {
  std::mutex m;
  std::condition_variable cv;
  std::function<void()> job;
  bool done = false, quit = false;
  std::thread t{[this] {
    cudaSetDevice(0);
    cudaFree(nullptr);  // the runtime's per-thread setup, outside any capture
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

int main() {
  truth::Writer w("graph_capture");
  auto check = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess) w.error("%s: %s", what, cudaGetErrorName(e));
    return e == cudaSuccess;
  };
  if (!check(cudaSetDevice(0), "cudaSetDevice")) return w.finish();
  int driver = 0;
  cudaDriverGetVersion(&driver);
  w.info("driver_version", driver);

  // The ledger: linear buffers of the program, graph allocations live outside their graph.
  truth::Bucket linear, graph;
  uint64_t alloc_peak = 0;
  auto update = [&] { alloc_peak = std::max(alloc_peak, linear.cur + graph.cur); };

  cudaStream_t s, s2, sw;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate(s)");
  check(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "cudaStreamCreate(s2)");
  check(cudaStreamCreateWithFlags(&sw, cudaStreamNonBlocking), "cudaStreamCreate(worker)");
  // acc[i]: what graph i's sums added up to; acc[15]: the worker's buffer.
  unsigned long long* acc = nullptr;
  uint32_t* wbuf = nullptr;
  constexpr size_t kAccBytes = 4096, kWorkerBytes = 1 * MiB, kWorkerN = kWorkerBytes / 4;
  if (!check(cudaMalloc(&acc, kAccBytes), "cudaMalloc(acc)")) return w.finish();
  linear.add(kAccBytes);
  if (!check(cudaMalloc(&wbuf, kWorkerBytes), "cudaMalloc(worker)")) return w.finish();
  linear.add(kWorkerBytes);
  update();
  check(cudaMemset(acc, 0, kAccBytes), "cudaMemset(acc)");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  std::vector<graph_truth::Graph> graphs;
  std::vector<cudaGraph_t> keep_graphs;
  std::vector<cudaGraphExec_t> keep_execs;
  struct Expect { int acc; uint64_t launches; size_t n; uint32_t seed; const char* what; };
  std::vector<Expect> expects;
  int captures = 0, captures_ok = 0;

  // Ends the capture on s and reads the graph's memory nodes; false when the capture failed.
  auto end_capture = [&](const char* what, cudaGraph_t* g, graph_truth::MemNodes* nodes) {
    ++captures;
    *g = nullptr;
    cudaError_t e = cudaStreamEndCapture(s, g);
    if (e != cudaSuccess || !*g) {
      w.error("%s: cudaStreamEndCapture: %s", what, cudaGetErrorName(e));
      cudaGetLastError();
      return false;
    }
    ++captures_ok;
    keep_graphs.push_back(*g);
    return check(graph_truth::mem_nodes(*g, nodes), "mem_nodes");
  };
  auto want_nodes = [&](const char* what, const graph_truth::MemNodes& n, uint64_t allocs, uint64_t frees,
                        uint64_t bytes, uint64_t outliving) {
    if (n.alloc_nodes != allocs || n.free_nodes != frees || n.bytes != bytes || n.outliving != outliving)
      w.error("%s: graph has %llu alloc / %llu free nodes, %llu B, %llu B outliving; expected %llu/%llu, %llu, %llu",
              what, (unsigned long long)n.alloc_nodes, (unsigned long long)n.free_nodes,
              (unsigned long long)n.bytes, (unsigned long long)n.outliving, (unsigned long long)allocs,
              (unsigned long long)frees, (unsigned long long)bytes, (unsigned long long)outliving);
  };
  auto instantiate = [&](cudaGraph_t g, unsigned long long flags, cudaGraphExec_t* e) {
    if (!check(cudaGraphInstantiate(e, g, flags), "cudaGraphInstantiate")) return false;
    keep_execs.push_back(*e);
    return true;
  };

  // 1. One capture per mode, with the worker's calls while it is open.
  {
    Worker worker;
    // The runtime sets a thread's context up at its first call, which a global capture open elsewhere
    // forbids (measured: the bare program failed 1 run in 2 without this): set it up before.
    cudaError_t warm = cudaSuccess;
    worker.run([&] { warm = cudaSetDevice(0); });
    check(warm, "cudaSetDevice(worker)");
    const struct { cudaStreamCaptureMode mode; const char* name; } modes[] = {
        {cudaStreamCaptureModeGlobal, "global"},
        {cudaStreamCaptureModeThreadLocal, "thread_local"},
        {cudaStreamCaptureModeRelaxed, "relaxed"}};
    for (int m = 0; m < 3; ++m) {
      const size_t bytes = 256 * MiB, n = bytes / 4;
      const uint32_t seed = 0x100u + m;
      if (!check(cudaStreamBeginCapture(s, modes[m].mode), "cudaStreamBeginCapture")) continue;
      cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
      check(cudaStreamIsCapturing(s, &st), "cudaStreamIsCapturing(s)");
      if (st != cudaStreamCaptureStatusActive) w.error("%s: capture not active after begin", modes[m].name);
      uint32_t* p = nullptr;
      check(cudaMallocAsync((void**)&p, bytes, s), "cudaMallocAsync (captured)");
      fill<<<kGrid, kBlock, 0, s>>>(p, n, seed);
      cudaError_t worker_err = cudaSuccess;
      cudaStreamCaptureStatus worker_st = cudaStreamCaptureStatusActive;
      worker.run([&] {
        int dev = -1;
        for (int i = 0; i < 100 && worker_err == cudaSuccess; ++i)
          worker_err = cudaStreamIsCapturing(sw, &worker_st);
        if (worker_err == cudaSuccess) worker_err = cudaGetDevice(&dev);
        fill<<<64, kBlock, 0, sw>>>(wbuf, kWorkerN, 77u);
        if (worker_err == cudaSuccess) worker_err = cudaGetLastError();
      });
      if (worker_err != cudaSuccess || worker_st != cudaStreamCaptureStatusNone)
        w.error("%s: second thread during the capture: %s, its stream's status %d", modes[m].name,
                cudaGetErrorName(worker_err), (int)worker_st);
      sum<<<kGrid, kBlock, 0, s>>>(p, n, acc + m);
      check(cudaFreeAsync(p, s), "cudaFreeAsync (captured)");
      cudaGraph_t g;
      graph_truth::MemNodes nodes;
      if (!end_capture(modes[m].name, &g, &nodes)) continue;
      want_nodes(modes[m].name, nodes, 1, 1, bytes, 0);
      cudaGraphExec_t e;
      if (!instantiate(g, 0, &e)) continue;
      graph_truth::Graph gt{"capture", modes[m].name, nodes};
      gt.instantiations = 1;
      gt.streams = 1;
      for (int i = 0; i < 50; ++i)
        if (check(cudaGraphLaunch(e, s), "cudaGraphLaunch")) ++gt.launches;
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      check(cudaStreamSynchronize(sw), "cudaStreamSynchronize(worker)");
      graphs.push_back(gt);
      expects.push_back({m, gt.launches, n, seed, modes[m].name});
    }
  }

  // 2. An allocation that outlives its launch, freed outside the graph.
  {
    const size_t bytes = 64 * MiB, n = bytes / 4;
    const uint32_t seed = 0x200u;
    uint32_t* p = nullptr;
    cudaGraph_t g;
    graph_truth::MemNodes nodes;
    cudaGraphExec_t e;
    if (check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture")) {
      check(cudaMallocAsync((void**)&p, bytes, s), "cudaMallocAsync (captured)");
      fill<<<kGrid, kBlock, 0, s>>>(p, n, seed);
      if (end_capture("outliving", &g, &nodes) && instantiate(g, 0, &e)) {
        want_nodes("outliving", nodes, 1, 0, bytes, bytes);
        graph_truth::Graph gt{"capture", "global", nodes};
        gt.instantiations = 1;
        gt.streams = 1;
        if (check(cudaGraphLaunch(e, s), "cudaGraphLaunch(outliving 1)")) {
          ++gt.launches;
          graph.add(bytes);
          update();
          sum<<<kGrid, kBlock, 0, s>>>(p, n, acc + 3);
          check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
          if (check(cudaFreeAsync(p, s2), "cudaFreeAsync(outliving, other stream)")) graph.sub(bytes);
          check(cudaStreamSynchronize(s2), "cudaStreamSynchronize(s2)");
          if (check(cudaGraphLaunch(e, s), "cudaGraphLaunch(outliving 2)")) {
            ++gt.launches;
            graph.add(bytes);
            update();
            sum<<<kGrid, kBlock, 0, s>>>(p, n, acc + 3);
            check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
            if (check(cudaFree(p), "cudaFree(outliving)")) graph.sub(bytes);
          }
        }
        graphs.push_back(gt);
        expects.push_back({3, gt.launches, n, seed, "outliving"});
      }
    }
  }

  // 3. Auto free on launch.
  {
    const size_t bytes = 48 * MiB, n = bytes / 4;
    const uint32_t seed = 0x300u;
    uint32_t* p = nullptr;
    cudaGraph_t g;
    graph_truth::MemNodes nodes;
    cudaGraphExec_t e;
    if (check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture")) {
      check(cudaMallocAsync((void**)&p, bytes, s), "cudaMallocAsync (captured)");
      fill<<<kGrid, kBlock, 0, s>>>(p, n, seed);
      if (end_capture("auto_free", &g, &nodes) && instantiate(g, cudaGraphInstantiateFlagAutoFreeOnLaunch, &e)) {
        want_nodes("auto_free", nodes, 1, 0, bytes, bytes);
        graph_truth::Graph gt{"capture", "global", nodes};
        gt.instantiations = 1;
        gt.streams = 1;
        for (int i = 0; i < 3; ++i) {
          if (!check(cudaGraphLaunch(e, s), "cudaGraphLaunch(auto free)")) break;
          if (gt.launches++) graph.sub(bytes);  // the launch freed the previous allocation first
          graph.add(bytes);
          update();
          sum<<<kGrid, kBlock, 0, s>>>(p, n, acc + 4);
        }
        if (gt.launches && check(cudaFreeAsync(p, s), "cudaFreeAsync(auto free)")) graph.sub(bytes);
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        graphs.push_back(gt);
        expects.push_back({4, gt.launches, n, seed, "auto_free"});
      }
    }
  }

  // 4. Explicit memory nodes, uploaded once, launched on two streams.
  {
    const size_t bytes = 32 * MiB;
    size_t n = bytes / 4;
    uint32_t seed = 0x400u;
    cudaGraph_t g = nullptr;
    if (check(cudaGraphCreate(&g, 0), "cudaGraphCreate")) {
      keep_graphs.push_back(g);
      cudaMemAllocNodeParams ap{};
      ap.poolProps.allocType = cudaMemAllocationTypePinned;
      ap.poolProps.location.type = cudaMemLocationTypeDevice;
      ap.poolProps.location.id = 0;
      ap.bytesize = bytes;
      cudaGraphNode_t an, fn, sn, frn;
      bool built = check(cudaGraphAddMemAllocNode(&an, g, nullptr, 0, &ap), "cudaGraphAddMemAllocNode");
      uint32_t* p = static_cast<uint32_t*>(ap.dptr);
      unsigned long long* a = acc + 5;
      void* fill_args[] = {&p, &n, &seed};
      void* sum_args[] = {&p, &n, &a};
      cudaKernelNodeParams kp{};
      kp.gridDim = dim3(kGrid);
      kp.blockDim = dim3(kBlock);
      kp.func = (void*)fill;
      kp.kernelParams = fill_args;
      built = built && check(cudaGraphAddKernelNode(&fn, g, &an, 1, &kp), "cudaGraphAddKernelNode(fill)");
      kp.func = (void*)sum;
      kp.kernelParams = sum_args;
      built = built && check(cudaGraphAddKernelNode(&sn, g, &fn, 1, &kp), "cudaGraphAddKernelNode(sum)");
      built = built && check(cudaGraphAddMemFreeNode(&frn, g, &sn, 1, ap.dptr), "cudaGraphAddMemFreeNode");
      graph_truth::MemNodes nodes;
      cudaGraphExec_t e;
      if (built && check(graph_truth::mem_nodes(g, &nodes), "mem_nodes") && instantiate(g, 0, &e)) {
        want_nodes("explicit", nodes, 1, 1, bytes, 0);
        graph_truth::Graph gt{"explicit", nullptr, nodes};
        gt.instantiations = 1;
        if (check(cudaGraphUpload(e, s), "cudaGraphUpload")) gt.uploads = 1;
        for (int i = 0; i < 5; ++i)
          if (check(cudaGraphLaunch(e, i < 3 ? s : s2), "cudaGraphLaunch(explicit)")) ++gt.launches;
        gt.streams = 2;
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        check(cudaStreamSynchronize(s2), "cudaStreamSynchronize(s2)");
        graphs.push_back(gt);
        expects.push_back({5, gt.launches, n, seed, "explicit"});
      }
    }
  }

  // 5. Fork/join: the allocation is made on the joined stream.
  {
    const size_t bytes = 24 * MiB, n = bytes / 4;
    const uint32_t seed = 0x500u;
    cudaEvent_t fork, join;
    check(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), "cudaEventCreate");
    uint32_t* p = nullptr;
    cudaGraph_t g;
    graph_truth::MemNodes nodes;
    cudaGraphExec_t e;
    if (check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture")) {
      check(cudaEventRecord(fork, s), "cudaEventRecord(fork)");
      check(cudaStreamWaitEvent(s2, fork, 0), "cudaStreamWaitEvent(s2, fork)");
      check(cudaMallocAsync((void**)&p, bytes, s2), "cudaMallocAsync (captured, joined stream)");
      fill<<<kGrid, kBlock, 0, s2>>>(p, n, seed);
      check(cudaEventRecord(join, s2), "cudaEventRecord(join)");
      check(cudaStreamWaitEvent(s, join, 0), "cudaStreamWaitEvent(s, join)");
      sum<<<kGrid, kBlock, 0, s>>>(p, n, acc + 6);
      check(cudaFreeAsync(p, s), "cudaFreeAsync (captured)");
      if (end_capture("fork_join", &g, &nodes) && instantiate(g, 0, &e)) {
        want_nodes("fork_join", nodes, 1, 1, bytes, 0);
        graph_truth::Graph gt{"capture", "global", nodes};
        gt.instantiations = 1;
        gt.streams = 1;
        for (int i = 0; i < 10; ++i)
          if (check(cudaGraphLaunch(e, s), "cudaGraphLaunch(fork/join)")) ++gt.launches;
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        graphs.push_back(gt);
        expects.push_back({6, gt.launches, n, seed, "fork_join"});
      }
    }
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
  }

  // 6. Live at exit on purpose.
  {
    const size_t bytes = 16 * MiB, n = bytes / 4;
    const uint32_t seed = 0x600u;
    uint32_t* p = nullptr;
    cudaGraph_t g;
    graph_truth::MemNodes nodes;
    cudaGraphExec_t e;
    if (check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture")) {
      check(cudaMallocAsync((void**)&p, bytes, s), "cudaMallocAsync (captured)");
      fill<<<kGrid, kBlock, 0, s>>>(p, n, seed);
      if (end_capture("live_at_exit", &g, &nodes) && instantiate(g, 0, &e)) {
        want_nodes("live_at_exit", nodes, 1, 0, bytes, bytes);
        graph_truth::Graph gt{"capture", "global", nodes};
        gt.instantiations = 1;
        gt.streams = 1;
        if (check(cudaGraphLaunch(e, s), "cudaGraphLaunch(live at exit)")) {
          ++gt.launches;
          graph.add(bytes);
          update();
          sum<<<kGrid, kBlock, 0, s>>>(p, n, acc + 7);
        }
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        graphs.push_back(gt);
        expects.push_back({7, gt.launches, n, seed, "live_at_exit"});
      }
    }
  }

  // Results: every sum is launches x the buffer's sum; the worker's buffer holds its fill.
  sum<<<64, kBlock, 0, s>>>(wbuf, kWorkerN, acc + 15);
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  unsigned long long host[16] = {};
  check(cudaMemcpy(host, acc, sizeof host, cudaMemcpyDeviceToHost), "cudaMemcpy(acc)");
  for (const Expect& x : expects) {
    const uint64_t want = x.launches * expected_sum(x.n, x.seed);
    if (host[x.acc] != want)
      w.error("%s: sum %llu, expected %llu", x.what, (unsigned long long)host[x.acc], (unsigned long long)want);
  }
  if (host[15] != expected_sum(kWorkerN, 77u)) w.error("worker's buffer: wrong sum");
  if (captures != 7 || captures_ok != 7) w.error("%d of %d captures ended with cudaSuccess (7 expected)", captures_ok, captures);
  std::printf("checksum %016llx\n", (unsigned long long)graph_truth::fnv(graph_truth::kFnvStart, host, sizeof host));
  std::fflush(stdout);

  // Everything but the one graph allocation is given back: live_at_exit is that allocation alone.
  if (check(cudaFree(acc), "cudaFree(acc)")) linear.sub(kAccBytes);
  if (check(cudaFree(wbuf), "cudaFree(worker)")) linear.sub(kWorkerBytes);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  uint64_t mem[4];
  graph_truth::graph_mem(w, mem);
  w.info("captures_ok", captures_ok);
  w.top("graphs", graph_truth::graphs_json(graphs));
  w.top("graphs_complete", "true");  // no graph here but these: any other in the summary is wrong
  w.kind_checks("linear", linear);
  w.kind_checks("graph", graph);
  // Captured cudaMallocAsync/cudaFreeAsync and the free of a graph allocation outside its graph
  // are graph memory, never the default pool's.
  w.exact("dev0.by_kind.pool.allocs", 0);
  w.exact("dev0.by_kind.pool.frees", 0);
  w.exact("dev0.allocated_bytes.peak", alloc_peak);
  w.exact("dev0.allocated_bytes.current", linear.cur + graph.cur);
  w.exact("live_at_exit.count", 1);
  w.exact("live_at_exit.bytes", 16 * MiB);
  return w.finish();
}
