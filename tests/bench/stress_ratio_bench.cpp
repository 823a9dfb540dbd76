// stress_ratio_bench [--rounds R] [--threads T] [--iters I]: what the shim costs the multi-thread
// allocation test (tests/programs/prog_stress: T threads racing alloc/free pairs on reused
// addresses, T=8 I=50000 in tests/integration/stress_test.cpp) on the fake driver. Each round
// runs it without the shim, under the shim at default settings and under the shim with
// GPUMEMPROF_STACKS=0, the order rotating every round (interleaved: machine noise hits all alike),
// and prints each shimmed variant's time / the time without the shim as a median with its spread.
// Run directories go to a temporary directory, removed at the end.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "interleaved.h"

int main(int argc, char** argv) {
  int rounds = 7, threads = 8, iters = 50000;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    const int v = i + 1 < argc ? std::atoi(argv[i + 1]) : 0;
    if (v <= 0) {
      std::fprintf(stderr, "stress_ratio_bench: %s needs a positive number\n", argv[i]);
      return 2;
    }
    if (a == "--rounds") rounds = v;
    else if (a == "--threads") threads = v;
    else if (a == "--iters") iters = v;
    else {
      std::fprintf(stderr, "stress_ratio_bench: unknown option %s (accepted: --rounds --threads --iters)\n", argv[i]);
      return 2;
    }
  }
  char tmpl[] = "/tmp/gmp-stressbench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::vector<std::string> cmd = {GMP_STRESS_PATH, std::to_string(threads), std::to_string(iters)};
  using Env = std::vector<std::pair<std::string, std::string>>;
  const Env bare = {{"LD_LIBRARY_PATH", GMP_FAKE_DIR}, {"FAKE_CUDA_CAPACITY", "16G"}};
  Env shim = bare;
  shim.push_back({"LD_PRELOAD", GMP_SHIM_PATH});
  shim.push_back({"GPUMEMPROF_OUTPUT", dir + "/run.%p"});
  Env no_stacks = shim;
  no_stacks.push_back({"GPUMEMPROF_STACKS", "0"});
  const char* names[] = {"no shim", "shim, defaults", "shim, GPUMEMPROF_STACKS=0"};
  const Env* envs[] = {&bare, &shim, &no_stacks};
  std::vector<double> secs[3], ratios[3];
  for (int r = 0; r < rounds; ++r) {
    double t[3];
    for (int k = 0; k < 3; ++k) {
      const int v = (r + k) % 3;
      t[v] = gmp::bench::timed_run(cmd, *envs[v]);
    }
    for (int v = 0; v < 3; ++v) {
      secs[v].push_back(t[v]);
      ratios[v].push_back(t[v] / t[0]);
    }
    std::printf("round %d: %.3f s / %.3f s / %.3f s\n", r + 1, t[0], t[1], t[2]);
    std::fflush(stdout);
    if (std::system(("rm -rf " + dir + "/run.*").c_str()) != 0) break;
  }
  rmdir(dir.c_str());
  std::printf("prog_stress %d %d, %d interleaved rounds (median, min-max):\n", threads, iters, rounds);
  for (int v = 0; v < 3; ++v) {
    const auto s = gmp::bench::spread(secs[v]);
    std::printf("  %-26s %.3f s (%.3f-%.3f)", names[v], s.median, s.min, s.max);
    if (v > 0) {
      const auto q = gmp::bench::spread(ratios[v]);
      std::printf("  ratio %.2f (%.2f-%.2f)", q.median, q.min, q.max);
    }
    std::printf("\n");
  }
  return 0;
}
