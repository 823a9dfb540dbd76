// Allocation-pair microbenchmark, run by scripts/gpu_check.py with and without the shim.
//   bench_async_pair async  N REPS   N x (cudaMallocAsync + cudaFreeAsync) on one stream, one sync
//   bench_async_pair malloc N REPS   N x (cudaMalloc + cudaFree)
// Sizes cycle 256 B .. 1 MiB (13 powers of two). One warm-up repetition (it also grows the pool)
// is not timed. Prints one JSON line: ns per pair for each repetition, their median, and the
// number of pairs made in total (the shim's allocs/frees for the kind must equal it exactly).
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[1], "async") && strcmp(argv[1], "malloc"))) {
    fprintf(stderr, "usage: %s async|malloc PAIRS REPS\n", argv[0]);
    return 2;
  }
  const bool async = !strcmp(argv[1], "async");
  const long n = atol(argv[2]), reps = atol(argv[3]);
  cudaStream_t s;
  if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
    fprintf(stderr, "CUDA init failed\n");
    return 1;
  }
  long pairs = 0, errors = 0;
  auto run = [&](long count) {
    for (long i = 0; i < count; ++i) {
      void* p = nullptr;
      size_t size = size_t(256) << (i % 13);
      if (async) {
        errors += cudaMallocAsync(&p, size, s) != cudaSuccess;
        errors += cudaFreeAsync(p, s) != cudaSuccess;
      } else {
        errors += cudaMalloc(&p, size) != cudaSuccess;
        errors += cudaFree(p) != cudaSuccess;
      }
    }
    errors += cudaStreamSynchronize(s) != cudaSuccess;
    pairs += count;
  };
  run(std::max(1L, n / 10));  // warm-up
  std::vector<double> ns;
  for (long r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    run(n);
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n));
  }
  std::vector<double> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  if (sorted.size() % 2 == 0) median = (median + sorted[sorted.size() / 2 - 1]) / 2;
  std::string list;
  for (double v : ns) list += (list.empty() ? "" : ", ") + std::to_string(v);
  printf("{\"mode\": \"%s\", \"pid\": %d, \"pairs_per_rep\": %ld, \"reps\": %ld, \"pairs_total\": %ld, "
         "\"errors\": %ld, \"ns_per_pair\": [%s], \"median_ns\": %.3f}\n",
         argv[1], (int)getpid(), n, reps, pairs, errors, list.c_str(), median);
  return errors ? 1 : 0;
}
