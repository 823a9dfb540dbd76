// ring_wait_bench [--rounds R] [--threads T] [--iters I]: what a small ring costs when many threads
// allocate at once. Runs prog_stress T I (T threads of alloc/free pairs, fake driver) under the
// shim with GPUMEMPROF_RING_EVENTS=1024 and with the default ring, alternately R times (rounds
// interleave, so machine noise hits both alike), and prints each wall time, the median of the
// per-round ratios small/default, their spread, and the producer waits of the last small run.
// Run directories go to a temporary directory that is removed at the end.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

double run_stress(const std::string& dir, const char* ring, int threads, int iters) {
  const std::string t = std::to_string(threads), n = std::to_string(iters);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("LD_PRELOAD", GMP_SHIM_PATH, 1);
    setenv("LD_LIBRARY_PATH", GMP_FAKE_DIR, 1);
    setenv("GPUMEMPROF_OUTPUT", (dir + "/run.%p").c_str(), 1);
    if (ring != nullptr) setenv("GPUMEMPROF_RING_EVENTS", ring, 1);
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    execl(GMP_STRESS_PATH, "prog_stress", t.c_str(), n.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "ring_wait_bench: prog_stress failed (status %d)\n", status);
    std::exit(1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, threads = 64, iters = 5000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (v <= 0) return std::fprintf(stderr, "ring_wait_bench: %s needs a positive number\n", argv[i]), 2;
    if (a == "--rounds") rounds = v;
    else if (a == "--threads") threads = v;
    else if (a == "--iters") iters = v;
    else return std::fprintf(stderr, "ring_wait_bench: unknown option %s\n", argv[i]), 2;
  }
  char tmpl[] = "/tmp/gmp-ringbench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    const double small = run_stress(dir, "1024", threads, iters);
    const double normal = run_stress(dir, nullptr, threads, iters);
    ratios.push_back(small / normal);
    std::printf("round %d: ring 1024 %.3f s, default ring %.3f s, ratio %.2f\n", r + 1, small, normal, small / normal);
    std::fflush(stdout);
    if (std::system(("rm -rf " + dir + "/run.*").c_str()) != 0) return 1;
  }
  std::printf("%d threads x %d pairs: ratio ring 1024 / default, median %.2f (min %.2f, max %.2f, %d rounds)\n",
              threads, iters, median(ratios), *std::min_element(ratios.begin(), ratios.end()),
              *std::max_element(ratios.begin(), ratios.end()), rounds);
  rmdir(dir.c_str());
  return 0;
}
