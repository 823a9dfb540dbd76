// prog_lifecycle MODE — process lifecycles a profiler must survive. Driver resolved cudart-style
// (dlopen libcuda.so.1 + cuGetProcAddress_v2). All allocations are cuMemAlloc_v2 on device 0.
//
//   return       alloc 2 MiB and 1 MiB (3 MiB), free the 1 MiB one, return 0
//                (2 MiB live at exit)
//   exit-thread  main allocs 1 MiB; a second thread allocs 2 MiB then calls exit(3) while main
//                blocks in join (exit status 3; 3 MiB live)
//   fork         parent allocs 1 MiB (P); fork(); child allocs 2 MiB, frees P (an address its
//                profiler never saw allocated: unknown free), frees its own, exit(0); parent
//                waits, checks the child exited 0, frees P, returns 0
//   fork-nocuda  parent allocs 1 MiB; fork(); child exit(0)s without touching CUDA; parent
//                waits, checks the child exited 0, frees its 1 MiB, returns 0
//   exec         alloc 1 MiB, then execv("/proc/self/exe", {"prog_lifecycle", "return"})
//   sigterm      alloc 4 MiB, raise(SIGTERM) (exits 1 if it survives the signal)
//   wait-signal  alloc 4 MiB, print "ready" on stdout (flushed), then sleep up to 30 s and
//                return 0 (4 MiB live)
//   abort        alloc 1 MiB, abort()
//   no-cuda      never touches CUDA (not even dlopen); returns 0
//   init-only    dlopen + cuGetProcAddress lookups + cuInit only, no context, no memory op;
//                returns 0
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

#include "check.h"
#include "driver_loader.h"

namespace {

constexpr size_t MiB = size_t{1} << 20;

DriverTable g_t;
CUcontext g_ctx = nullptr;

void load() {
  std::string error;
  gmp::LoadOptions options;
  options.require_fake_hooks = false;
  if (!gmp::load_driver(gmp::LoadMode::CudartStyle, g_t, &error, options)) {
    throw gmp::CheckFailure(error);
  }
}

void init_context() {
  load();
  g_ctx = gmp::make_primary_context_current(g_t);
}

CUdeviceptr alloc(size_t bytes) {
  CUdeviceptr p = 0;
  CK(g_t.cuMemAlloc_v2(&p, bytes));
  CHECK(p != 0);
  return p;
}

void wait_child_ok(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  CHECK(r == pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw gmp::CheckFailure("child did not exit 0 (status " + std::to_string(status) + ")");
  }
}

int run(const std::string& mode) {
  if (mode == "no-cuda") return 0;
  if (mode == "init-only") {
    load();
    CK(g_t.cuInit(0));
    return 0;
  }
  init_context();
  if (mode == "return" || mode == "return-7") {
    alloc(2 * MiB);
    const CUdeviceptr one = alloc(1 * MiB);
    CK(g_t.cuMemFree_v2(one));
    return mode == "return" ? 0 : 7;
  }
  if (mode == "exit-thread") {
    alloc(1 * MiB);
    std::thread th([] {
      try {
        CK(g_t.cuCtxSetCurrent(g_ctx));
        alloc(2 * MiB);
      } catch (const gmp::CheckFailure& e) {
        std::fprintf(stderr, "prog_lifecycle: %s\n", e.what());
        std::exit(1);
      }
      std::exit(3);
    });
    th.join();  // never returns: exit(3) ends the process
    return 1;
  }
  if (mode == "fork") {
    const CUdeviceptr parent = alloc(1 * MiB);
    std::fflush(nullptr);
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      try {
        const CUdeviceptr own = alloc(2 * MiB);
        CK(g_t.cuMemFree_v2(parent));
        CK(g_t.cuMemFree_v2(own));
      } catch (const gmp::CheckFailure& e) {
        std::fprintf(stderr, "prog_lifecycle (child): %s\n", e.what());
        std::exit(1);
      }
      std::exit(0);
    }
    wait_child_ok(pid);
    CK(g_t.cuMemFree_v2(parent));
    return 0;
  }
  if (mode == "fork-nocuda") {
    const CUdeviceptr parent = alloc(1 * MiB);
    std::fflush(nullptr);
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) std::exit(0);
    wait_child_ok(pid);
    CK(g_t.cuMemFree_v2(parent));
    return 0;
  }
  if (mode == "exec") {
    alloc(1 * MiB);
    std::fflush(nullptr);
    char arg0[] = "prog_lifecycle";
    char arg1[] = "return";
    char* const args[] = {arg0, arg1, nullptr};
    execv("/proc/self/exe", args);
    throw gmp::CheckFailure(std::string("execv failed: ") + std::strerror(errno));
  }
  if (mode == "sigterm") {
    alloc(4 * MiB);
    std::fflush(nullptr);
    raise(SIGTERM);
    std::fprintf(stderr, "prog_lifecycle: still alive after SIGTERM\n");
    return 1;
  }
  if (mode == "wait-signal") {
    alloc(4 * MiB);
    std::printf("ready\n");
    std::fflush(stdout);
    timespec left{30, 0};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    return 0;
  }
  if (mode == "abort") {
    alloc(1 * MiB);
    std::fflush(nullptr);
    std::abort();
  }
  std::fprintf(stderr, "prog_lifecycle: unknown mode \"%s\"\n", mode.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: prog_lifecycle return|exit-thread|fork|fork-nocuda|exec|sigterm|"
                 "wait-signal|abort|no-cuda|init-only\n");
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const gmp::CheckFailure& e) {
    std::fprintf(stderr, "prog_lifecycle %s: %s\n", argv[1], e.what());
    return 1;
  }
}
