// cuBLAS under stream capture (global mode), run by scripts/gpu_check.py without the profiler and
// then under it; the exit status and the checksum line must be the same.
//
// One iteration is two SGEMMs (T = W X; X = 0.5 W T + 0.5 X, which stays bounded: W's spectral
// radius is about 1). It runs 20 times un-captured as the reference, then is captured twice and
// each graph launched 20 times from the same start:
//   default_ws  cuBLAS's own workspace: since CUDA 12.2 cuBLAS allocates it stream-ordered, so under
//               capture it becomes graph memory (allocation nodes), whatever it decides;
//   user_ws     a workspace set with cublasSetWorkspace: nothing for cuBLAS to allocate.
// The graphs' memory nodes are read from the graphs themselves; the driver's graph memory
// attributes at the end are the truth for by_kind.graph.reserved/used. Execs are kept until exit.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "graph_truth.h"
#include "truth.h"

constexpr int kN = 1024, kIters = 20;

int main() {
  truth::Writer w("graph_cublas");
  auto check = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess) w.error("%s: %s", what, cudaGetErrorName(e));
    return e == cudaSuccess;
  };
  auto cb = [&](cublasStatus_t st, const char* what) {
    if (st != CUBLAS_STATUS_SUCCESS) w.error("%s: %s", what, cublasGetStatusName(st));
    return st == CUBLAS_STATUS_SUCCESS;
  };
  if (!check(cudaSetDevice(0), "cudaSetDevice")) return w.finish();
  int version = 0;
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasHandle_t h;
  if (!cb(cublasCreate(&h), "cublasCreate")) return w.finish();
  cublasGetVersion(h, &version);
  w.info("cublas_version", version);
  cb(cublasSetStream(h, s), "cublasSetStream");

  const size_t elems = (size_t)kN * kN, bytes = elems * sizeof(float);
  std::vector<float> hw(elems), hx(elems);
  uint32_t r = 12345;
  auto rnd = [&] { r = r * 1664525u + 1013904223u; return (float)((r >> 8) * (1.0 / 16777216.0) * 2.0 - 1.0); };
  const float scale = std::sqrt(3.0f / kN);  // uniform [-1,1] has variance 1/3
  for (auto& v : hw) v = rnd() * scale;
  for (auto& v : hx) v = rnd();
  float *W, *X0, *X, *T, *ws = nullptr;
  check(cudaMalloc(&W, bytes), "cudaMalloc");
  check(cudaMalloc(&X0, bytes), "cudaMalloc");
  check(cudaMalloc(&X, bytes), "cudaMalloc");
  check(cudaMalloc(&T, bytes), "cudaMalloc");
  check(cudaMemcpy(W, hw.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(X0, hx.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");

  const float one = 1.0f, zero = 0.0f, half = 0.5f;
  auto iteration = [&] {
    cb(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, W, kN, X, kN, &zero, T, kN), "cublasSgemm(T)");
    cb(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &half, W, kN, T, kN, &half, X, kN), "cublasSgemm(X)");
  };
  auto result = [&](std::vector<float>& out) {
    out.resize(elems);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    check(cudaMemcpy(out.data(), X, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(X)");
  };

  // The reference, un-captured (cuBLAS sets up its default workspace here, outside any capture).
  std::vector<float> ref;
  check(cudaMemcpyAsync(X, X0, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
  for (int i = 0; i < kIters; ++i) iteration();
  result(ref);

  std::vector<graph_truth::Graph> graphs;
  uint64_t checksum = graph_truth::kFnvStart;
  const char* names[2] = {"default_ws", "user_ws"};
  for (int k = 0; k < 2; ++k) {
    if (k == 1) {
      // cublasSetStream resets the workspace to cuBLAS's own: set the stream first.
      const size_t ws_bytes = 32ull << 20;
      check(cudaMalloc(&ws, ws_bytes), "cudaMalloc(workspace)");
      cb(cublasSetWorkspace(h, ws, ws_bytes), "cublasSetWorkspace");
      w.info("user_workspace_bytes", ws_bytes);
    }
    check(cudaMemcpyAsync(X, X0, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    if (!check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture")) continue;
    iteration();
    cudaGraph_t g = nullptr;
    cudaError_t e = cudaStreamEndCapture(s, &g);
    if (e != cudaSuccess || !g) {
      w.error("%s: cudaStreamEndCapture: %s", names[k], cudaGetErrorName(e));
      cudaGetLastError();
      continue;
    }
    graph_truth::Graph gt{"capture", "global", {}};
    check(graph_truth::mem_nodes(g, &gt.nodes), "mem_nodes");
    cudaGraphExec_t exec;
    if (!check(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate")) continue;
    gt.instantiations = 1;
    gt.streams = 1;
    for (int i = 0; i < kIters; ++i)
      if (check(cudaGraphLaunch(exec, s), "cudaGraphLaunch")) ++gt.launches;
    std::vector<float> got;
    result(got);
    // Same sizes, same handle: the same kernels, but a workspace of another size may choose
    // another algorithm; the reference is therefore checked to a tolerance, and the checksum (the
    // graph's bits) is what must not change with the profiler.
    double worst = 0;
    for (size_t i = 0; i < elems; ++i)
      worst = std::max(worst, (double)std::fabs(got[i] - ref[i]) / (std::fabs(ref[i]) + 1e-3));
    if (!(worst < 1e-3)) w.error("%s: graph result differs from the un-captured run (relative %g)", names[k], worst);
    w.info(std::string(names[k]) + "_alloc_nodes", gt.nodes.alloc_nodes);
    w.info(std::string(names[k]) + "_bytes_per_launch", gt.nodes.bytes);
    w.info(std::string(names[k]) + "_outliving_bytes", gt.nodes.outliving);
    checksum = graph_truth::fnv(checksum, got.data(), bytes);
    graphs.push_back(gt);
  }
  std::printf("checksum %016llx\n", (unsigned long long)checksum);
  std::fflush(stdout);
  if (graphs.size() != 2) w.error("%zu of 2 graphs captured and launched", graphs.size());

  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  uint64_t mem[4];
  graph_truth::graph_mem(w, mem);
  w.top("graphs", graph_truth::graphs_json(graphs));
  return w.finish();
}
