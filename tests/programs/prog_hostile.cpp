// prog_hostile MODE [ARG...] — a program that does to its own process what real programs do and a
// profiler must survive unnoticed (docs/architecture.md, "Staying out of the program's way").
// Driver resolved cudart-style; allocations are cuMemAlloc_v2 of 1 MiB on device 0. Exit status 0
// when the program saw nothing of the profiler, 3 when it did (message on stderr), 1 on a driver
// error, 2 on a bad command line.
//
//   dup2 FILE N         allocate once (the profiler opens its files), write 160 bytes to FILE,
//                       dup2() FILE over every descriptor open on trace.gmpt, attribution.jsonl or
//                       gpumemprof.log (the profiler's files), then
//                       N alloc+free pairs, sleep 100 ms; FILE must still hold its 160 bytes
//   closefrom FILE N    allocate once, close every descriptor above 2, open FILE (it takes the
//                       freed low numbers) and write 160 bytes, N pairs, sleep 100 ms; FILE must
//                       still hold its 160 bytes
//   wait-child MS       fork a child (no CUDA) that exits 7 after MS ms; allocate 900 MiB (over the
//                       warning threshold of a 1 GiB fake device: an alert fires) and wait(-1) at
//                       once: it must return that child with status 7, and a second wait(-1) must
//                       fail with ECHILD
//   threads-signal T    T threads allocate and free in a loop; after 100 ms main raises SIGTERM
//                       (the process dies by it)
//   chdir START OTHER   chdir to START, allocate once (the run directory is created, relative to
//                       START with a relative GPUMEMPROF_OUTPUT), chdir to OTHER, allocate again
//   exec-fds            allocate once, sleep 50 ms, then exec /bin/sh to list (ls -l) the
//                       descriptors the new image inherited
//   _exit N             N alloc+free pairs and one more allocation, then _exit(5)
//   _Exit N             same, then _Exit(5)
//   quick_exit N        same, then quick_exit(5)
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "driver_loader.h"

namespace {

constexpr size_t MiB = size_t{1} << 20;
constexpr size_t kOwnBytes = 160;

DriverTable g_t;
CUcontext g_ctx = nullptr;

struct Seen : std::runtime_error {
  using std::runtime_error::runtime_error;
};

CUdeviceptr alloc(size_t bytes = MiB) {
  CUdeviceptr p = 0;
  CK(g_t.cuMemAlloc_v2(&p, bytes));
  return p;
}

void pairs(long n) {
  for (long i = 0; i < n; ++i) CK(g_t.cuMemFree_v2(alloc()));
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Descriptors open on a file of a run directory (by the files' names).
std::vector<int> profiler_descriptors() {
  std::vector<int> fds;
  DIR* d = opendir("/proc/self/fd");
  CHECK(d != nullptr);
  while (dirent* e = readdir(d)) {
    char target[4096];
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    const std::string t = target;
    for (const char* name : {"/trace.gmpt", "/attribution.jsonl", "/gpumemprof.log"}) {
      if (t.size() > std::strlen(name) && t.compare(t.size() - std::strlen(name), std::string::npos, name) == 0) {
        fds.push_back(std::atoi(e->d_name));
      }
    }
  }
  closedir(d);
  return fds;
}

int write_own_file(const char* path) {
  const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  const std::string content(kOwnBytes, 'x');
  CHECK(write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  return fd;
}

void expect_untouched(const char* path) {
  struct stat st {};
  CHECK(stat(path, &st) == 0);
  if (st.st_size != static_cast<off_t>(kOwnBytes)) {
    throw Seen(std::string(path) + " holds " + std::to_string(st.st_size) + " bytes, not " + std::to_string(kOwnBytes));
  }
}

void end_with(const std::string& how, long n) {
  pairs(n);
  alloc();
  if (how == "_exit") _exit(5);
  if (how == "_Exit") _Exit(5);
  quick_exit(5);
}

int usage() {
  std::fprintf(stderr, "usage: prog_hostile dup2|closefrom FILE N | wait-child MS | threads-signal T | "
                       "chdir START OTHER | exec-fds | _exit|_Exit|quick_exit N\n");
  return 2;
}

int run(int argc, char** argv) {
  const std::string mode = argv[1];
  std::string error;
  gmp::LoadOptions options;
  options.require_fake_hooks = false;
  if (!gmp::load_driver(gmp::LoadMode::CudartStyle, g_t, &error, options)) throw gmp::CheckFailure(error);
  g_ctx = gmp::make_primary_context_current(g_t);
  if (mode == "dup2" && argc == 4) {
    CK(g_t.cuMemFree_v2(alloc()));
    sleep_ms(50);  // the collector has opened the trace, attribution and log by now
    const int own = write_own_file(argv[2]);
    const std::vector<int> ours = profiler_descriptors();
    if (ours.empty()) throw Seen("no profiler descriptor found to take over");
    for (int fd : ours) CHECK(dup2(own, fd) == fd);
    pairs(std::atol(argv[3]));
    sleep_ms(100);
    expect_untouched(argv[2]);
    return 0;
  }
  if (mode == "closefrom" && argc == 4) {
    CK(g_t.cuMemFree_v2(alloc()));
    sleep_ms(50);
    for (int fd = 3; fd < 4096; ++fd) close(fd);
    write_own_file(argv[2]);
    write_own_file((std::string(argv[2]) + ".2").c_str());
    pairs(std::atol(argv[3]));
    sleep_ms(100);
    expect_untouched(argv[2]);
    expect_untouched((std::string(argv[2]) + ".2").c_str());
    return 0;
  }
  if (mode == "wait-child" && argc == 3) {
    const int ms = std::atoi(argv[2]);
    std::fflush(nullptr);
    const pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
      sleep_ms(ms);
      _exit(7);
    }
    alloc(900 * MiB);
    int status = 0;
    pid_t r;
    while ((r = wait(&status)) < 0 && errno == EINTR) {
    }
    if (r != child) throw Seen("wait() returned " + std::to_string(r) + ", not our child " + std::to_string(child));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) throw Seen("our child's status is " + std::to_string(status));
    sleep_ms(300);  // whatever else was started has finished by now
    r = wait(&status);
    if (r != -1 || errno != ECHILD) throw Seen("a second wait() returned " + std::to_string(r));
    return 0;
  }
  if (mode == "threads-signal" && argc == 3) {
    std::vector<std::thread> threads;
    for (int i = 0; i < std::atoi(argv[2]); ++i) {
      threads.emplace_back([] {
        try {
          CK(g_t.cuCtxSetCurrent(g_ctx));
          for (;;) pairs(1);
        } catch (const gmp::CheckFailure& e) {
          std::fprintf(stderr, "prog_hostile: %s\n", e.what());
          std::_Exit(1);
        }
      });
    }
    sleep_ms(100);
    raise(SIGTERM);
    sleep_ms(10'000);
    return 1;  // SIGTERM should have ended the process
  }
  if (mode == "chdir" && argc == 4) {
    CHECK(chdir(argv[2]) == 0);
    alloc();
    CHECK(chdir(argv[3]) == 0);
    alloc();
    return 0;
  }
  if (mode == "exec-fds" && argc == 2) {
    alloc();
    sleep_ms(50);
    std::fflush(nullptr);
    execl("/bin/sh", "sh", "-c", "ls -l /proc/$$/fd", static_cast<char*>(nullptr));
    return 1;
  }
  if ((mode == "_exit" || mode == "_Exit" || mode == "quick_exit") && argc == 3) {
    end_with(mode, std::atol(argv[2]));
  }
  return usage();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  try {
    return run(argc, argv);
  } catch (const Seen& e) {
    std::fprintf(stderr, "prog_hostile: the profiler was noticed: %s\n", e.what());
    return 3;
  } catch (const gmp::CheckFailure& e) {
    std::fprintf(stderr, "prog_hostile: %s\n", e.what());
    return 1;
  }
}
