// live_reader_bench [--rounds R] [--threads T] [--iters I]: what live.bin and a reader of it cost
// the profiled program (docs/live.md, "Cost"). prog_stress (T threads of alloc/free pairs on the
// fake driver) runs under the shim in four variants, the order rotating every round (interleaved:
// machine noise hits all alike):
//   live off         GPUMEMPROF_LIVE=0: no file, no registry entry
//   live, no reader  the default: the collector publishes, nobody reads
//   reader 10 Hz     a reader (read_live_file, as gpumemprof top does) every 100 ms, top's
//                    shortest --interval
//   reader flat out  a reader copying the file in a loop without pause: not a real workload (it
//                    takes a whole core from a 2-core machine), the bound of any reader's cost
//   control flat out the same loop over a file of the same size that nobody writes: what taking
//                    that core costs by itself, so that the difference to "reader flat out" is
//                    what the sequence lock and the shared file cost
// and prints each variant's time per event (the program's wall time / its alloc+free events) as a
// median with its spread, and its ratio to "live off". Run directories and the registry go to a
// temporary directory, removed at the end.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "interleaved.h"
#include "live_file.h"

namespace {

// Reads the live file of whichever process registered under `registry` (or `control`, a still file,
// when not empty) until `stop`, pausing `pause_ms` between reads (0: none); the number of
// consistent snapshots read.
uint64_t read_while(const std::string& registry, const std::string& control, int pause_ms,
                    const std::atomic<bool>& stop) {
  auto f = std::make_unique<gmp::live::LiveFile>();
  uint64_t snapshots = 0;
  int fd = control.empty() ? -1 : ::open(control.c_str(), O_RDONLY | O_CLOEXEC);
  while (!stop.load(std::memory_order_relaxed)) {
    if (fd < 0) {
      if (DIR* d = opendir(registry.c_str())) {
        while (dirent* e = readdir(d)) {
          if (e->d_name[0] == '.') continue;
          char target[4096];
          const ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
          if (n <= 0) continue;
          target[n] = '\0';
          fd = ::open((std::string(target) + "/live.bin").c_str(), O_RDONLY | O_CLOEXEC);
          break;
        }
        closedir(d);
      }
    }
    if (fd >= 0 && gmp::live::read_live_file(fd, *f) == gmp::live::ReadResult::Ok) ++snapshots;
    if (pause_ms > 0 || fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms > 0 ? pause_ms : 1));
  }
  if (fd >= 0) ::close(fd);
  return snapshots;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, threads = 2, iters = 100000;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    const int v = i + 1 < argc ? std::atoi(argv[i + 1]) : 0;
    if (v <= 0) {
      std::fprintf(stderr, "live_reader_bench: %s needs a positive number\n", argv[i]);
      return 2;
    }
    if (a == "--rounds") rounds = v;
    else if (a == "--threads") threads = v;
    else if (a == "--iters") iters = v;
    else {
      std::fprintf(stderr, "live_reader_bench: unknown option %s (accepted: --rounds --threads --iters)\n", argv[i]);
      return 2;
    }
  }
  char tmpl[] = "/tmp/gmp-livebench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string registry = dir + "/registry";
  const std::vector<std::string> cmd = {GMP_STRESS_PATH, std::to_string(threads), std::to_string(iters)};
  using Env = std::vector<std::pair<std::string, std::string>>;
  const Env live = {{"LD_LIBRARY_PATH", GMP_FAKE_DIR},   {"FAKE_CUDA_CAPACITY", "16G"},
                    {"LD_PRELOAD", GMP_SHIM_PATH},       {"GPUMEMPROF_OUTPUT", dir + "/run.%p"},
                    {"GPUMEMPROF_LIVE_REGISTRY", registry}};
  Env off = live;
  off.push_back({"GPUMEMPROF_LIVE", "0"});
  // The control's file: a live file's size, written once, never again.
  const std::string control = dir + "/control.bin";
  {
    auto still = std::make_unique<gmp::live::LiveFile>();
    gmp::live::init_live_file(*still);
    gmp::live::LiveFileWriter w;
    const int fd = ::open(control.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || !w.start(fd, *still)) {
      std::fprintf(stderr, "live_reader_bench: cannot write %s\n", control.c_str());
      return 1;
    }
    ::close(fd);
  }
  constexpr int kVariants = 5;
  const char* names[kVariants] = {"live off", "live, no reader", "reader 10 Hz", "reader flat out",
                                  "control flat out"};
  const Env* envs[kVariants] = {&off, &live, &live, &live, &off};
  const int pauses[kVariants] = {-1, -1, 100, 0, 0};  // -1: no reader
  // prog_stress's events: an alloc and a free per iteration, and a pool pair every 4th.
  const double events = 2.0 * threads * (iters + iters / 4);
  std::vector<double> per_event[kVariants], ratios[kVariants];
  uint64_t snapshots[kVariants] = {};
  for (int r = 0; r < rounds; ++r) {
    double t[kVariants];
    for (int k = 0; k < kVariants; ++k) {
      const int v = (r + k) % kVariants;
      std::atomic<bool> stop{false};
      std::thread reader;
      uint64_t read = 0;
      const std::string still = v == kVariants - 1 ? control : "";
      if (pauses[v] >= 0) reader = std::thread([&] { read = read_while(registry, still, pauses[v], stop); });
      t[v] = gmp::bench::timed_run(cmd, *envs[v]);
      stop = true;
      if (reader.joinable()) reader.join();
      snapshots[v] += read;
    }
    for (int v = 0; v < kVariants; ++v) {
      per_event[v].push_back(t[v] / events * 1e9);
      ratios[v].push_back(t[v] / t[0]);
    }
    std::printf("round %d: %.3f / %.3f / %.3f / %.3f / %.3f s\n", r + 1, t[0], t[1], t[2], t[3], t[4]);
    std::fflush(stdout);
    if (std::system(("rm -rf " + dir + "/run.* " + registry).c_str()) != 0) break;
  }
  std::system(("rm -rf " + dir).c_str());
  std::printf("prog_stress %d %d (%.0f events), %d interleaved rounds, ns per event (median, min-max):\n", threads,
              iters, events, rounds);
  for (int v = 0; v < kVariants; ++v) {
    const auto s = gmp::bench::spread(per_event[v]);
    std::printf("  %-17s %7.1f ns (%.1f-%.1f)", names[v], s.median, s.min, s.max);
    if (v > 0) {
      const auto q = gmp::bench::spread(ratios[v]);
      std::printf("  ratio %.3f (%.3f-%.3f)", q.median, q.min, q.max);
    }
    if (pauses[v] >= 0) std::printf("  %llu snapshots read", static_cast<unsigned long long>(snapshots[v]));
    std::printf("\n");
  }
  return 0;
}
