// ring_wait_bench [--rounds R] [--threads T] [--iters I] [--busy B]: what a small ring costs when
// many threads allocate at once. The workload is this program itself (--worker T I): T threads
// each making I back-to-back cuMemAlloc_v2/cuMemFree_v2 pairs on the fake driver, nothing in
// between, so the ring fills as fast as the shim takes events. It runs under the shim with
// GPUMEMPROF_RING_EVENTS=1024 and with the default ring, alternately R times (interleaved rounds:
// machine noise hits both alike), and the median of the per-round ratios small/default is printed
// with its spread. --busy B keeps B other processes spinning meanwhile: a machine whose cores are
// all taken, where producers waiting on a full ring used to collapse throughput. Run directories
// go to a temporary directory, removed at the end.
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "interleaved.h"

namespace {

int worker(int threads, int iters) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) return 1;
  auto get = [&](const char* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(get("cuInit"));
  auto retain = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(get("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<CUresult (*)(CUcontext)>(get("cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(get("cuMemAlloc_v2"));
  auto release = reinterpret_cast<CUresult (*)(CUdeviceptr)>(get("cuMemFree_v2"));
  CUcontext ctx = nullptr;
  if (init(0) != CUDA_SUCCESS || retain(&ctx, 0) != CUDA_SUCCESS) return 1;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      set_current(ctx);
      for (int i = 0; i < iters; ++i) {
        CUdeviceptr p = 0;
        if (alloc(&p, 256) != CUDA_SUCCESS || release(p) != CUDA_SUCCESS) std::_Exit(1);
      }
    });
  }
  for (auto& th : pool) th.join();
  return 0;
}

double run_worker(const std::string& self, const std::string& dir, const char* ring, int threads, int iters) {
  const std::string t = std::to_string(threads), n = std::to_string(iters);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("LD_PRELOAD", GMP_SHIM_PATH, 1);
    setenv("LD_LIBRARY_PATH", GMP_FAKE_DIR, 1);
    setenv("GPUMEMPROF_OUTPUT", (dir + "/run.%p").c_str(), 1);
    if (ring != nullptr) setenv("GPUMEMPROF_RING_EVENTS", ring, 1);
    execl(self.c_str(), "ring_wait_bench", "--worker", t.c_str(), n.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "ring_wait_bench: the workload failed (status %d)\n", status);
    std::exit(1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--worker") return worker(std::atoi(argv[2]), std::atoi(argv[3]));
  int rounds = 5, threads = 64, iters = 5000, busy = 0;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    const int v = i + 1 < argc ? std::atoi(argv[i + 1]) : -1;
    if (v < 0 || (v == 0 && a != "--busy")) {
      std::fprintf(stderr, "ring_wait_bench: %s needs a positive number\n", argv[i]);
      return 2;
    }
    if (a == "--rounds") rounds = v;
    else if (a == "--threads") threads = v;
    else if (a == "--iters") iters = v;
    else if (a == "--busy") busy = v;
    else {
      std::fprintf(stderr, "ring_wait_bench: unknown option %s (accepted: --rounds --threads --iters --busy)\n", argv[i]);
      return 2;
    }
  }
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  char tmpl[] = "/tmp/gmp-ringbench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::vector<pid_t> spinners;
  for (int b = 0; b < busy; ++b) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (;;) asm volatile("" ::: "memory");  // spin until killed
    }
    spinners.push_back(pid);
  }
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    const double small = run_worker(self, dir, "1024", threads, iters);
    const double normal = run_worker(self, dir, nullptr, threads, iters);
    ratios.push_back(small / normal);
    std::printf("round %d: ring 1024 %.3f s, default ring %.3f s, ratio %.2f\n", r + 1, small, normal, small / normal);
    std::fflush(stdout);
    if (std::system(("rm -rf " + dir + "/run.*").c_str()) != 0) break;
  }
  for (pid_t pid : spinners) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  rmdir(dir.c_str());
  const auto s = gmp::bench::spread(ratios);
  std::printf("%d busy processes; %d threads x %d pairs: ratio ring 1024 / default, median %.2f "
              "(min %.2f, max %.2f, %d rounds)\n",
              busy, threads, iters, s.median, s.min, s.max, rounds);
  return 0;
}
