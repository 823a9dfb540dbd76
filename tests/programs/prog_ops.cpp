// prog_ops OP [OP...] — a scriptable driver-API program for profiler tests. The driver is
// resolved cudart-style (dlopen libcuda.so.1 + cuGetProcAddress_v2); after cuInit and the primary
// context of device 0 is made current, the ops run in argv order. Each op is `name` or
// `name:arg` (the argument is everything after the first ':').
//
//   alloc:SIZE         cuMemAlloc_v2(SIZE); on success the pointer is appended to the list, on
//                      failure `alloc failed <CUresult number>` is printed and nothing is appended
//   alloc_async:SIZE   cuMemAllocAsync(SIZE, CU_STREAM_LEGACY); same list, same failure handling
//   free:I             cuMemFree_v2 of list entry I (0-based, allocation order; it stays a hole)
//   free_last          cuMemFree_v2 of the most recent live entry
//   free_all           cuMemFree_v2 of every live entry, oldest first
//   sync               cuCtxSynchronize_v2(NULL) (cuStreamSynchronize(CU_STREAM_LEGACY) when the
//                      driver is older than CUDA 13 and the table has no cuCtxSynchronize_v2)
//   sleep:MS           sleep MS milliseconds
//   print:TEXT         print TEXT and a newline on stdout
//   abort              abort()
//   exit:N             exit(N) (atexit handlers run; nothing is freed)
//   expect_fail:SIZE   cuMemAlloc_v2(SIZE) that must return CUDA_ERROR_OUT_OF_MEMORY
//   retry_ok:SIZE      cuMemAlloc_v2(SIZE) that must succeed (appended to the list)
//   churn:N            N times cuMemAlloc_v2(1 MiB) then cuMemFree_v2 of it (the list is untouched)
//   fill:PATH          create PATH and write zeros to it until its filesystem is full (ENOSPC or
//                      EDQUOT); any other error is a failure
//   remove:PATH        remove the directory PATH with everything in it (symlinks are not followed)
//   fsize_limit:SIZE   setrlimit(RLIMIT_FSIZE) to SIZE bytes (soft limit; the hard one is kept)
//   mark:NAME          gpumemprof_mark(NAME) (include/gpumemprof.h; nothing without the shim)
//   push:NAME          gpumemprof_range_push(NAME)
//   pop                gpumemprof_range_pop()
//   cancelled_alloc:SIZE  a thread, with a cancellation request already pending (deferred, as
//                      pthread_cancel leaves it), calls cuMemAlloc_v2(SIZE) then pthread_testcancel();
//                      prints `cancelled` when the thread ended at that request (the block stays)
//   wait:PATH          wait until PATH exists (checked every millisecond; a failure after 60 s), so
//                      that a test can act between two ops
//   sigterm_exit:N     install a SIGTERM handler that calls exit(N)
//   raise_in:NAME      the fake driver raises SIGTERM inside the next call of the entry point NAME,
//                      holding its lock where that call takes it (fakecuda_raise_in; the fake only)
//   nofile:N           setrlimit(RLIMIT_NOFILE) to N descriptors (soft limit; the hard one is kept)
//   open_null          open /dev/null (kept open) and print `fd <the descriptor's number>`
//   exhaust_fds        open /dev/null until open() fails with EMFILE (all kept open); any other
//                      error is a failure
//
// Arguments after `--` are not ops: they are ignored, so that tests can put anything on the
// command line.
//
// SIZE: bytes, optionally followed by K, M, G or T (1024-based, case-insensitive); 0 is passed on
// (the driver refuses it: `alloc:0` prints `alloc failed 1`).
// After the last op `ok` is printed and the program returns 0; what is still allocated stays
// allocated (live at exit). stdout is flushed after every line, so the output survives abort.
// Exit status: 0 done, 1 an unexpected driver result or a bad list index (message on stderr),
// 2 a malformed command line (checked before anything runs).
#include <fcntl.h>
#include <pthread.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "gpumemprof.h"
#include "driver_loader.h"

namespace {

enum class Op {
  Alloc, AllocAsync, Free, FreeLast, FreeAll, Sync, Sleep, Print, Abort, Exit, ExpectFail, RetryOk,
  Churn, Fill, Remove, FsizeLimit, Mark, Push, Pop, CancelledAlloc, Wait, SigtermExit, RaiseIn, Nofile, OpenNull,
  ExhaustFds
};

enum class Arg { None, Size, Index, Millis, Text, Status };

struct OpSpec {
  const char* name;
  Op op;
  Arg arg;
};

constexpr OpSpec kOps[] = {
    {"alloc", Op::Alloc, Arg::Size},          {"alloc_async", Op::AllocAsync, Arg::Size},
    {"free", Op::Free, Arg::Index},           {"free_last", Op::FreeLast, Arg::None},
    {"free_all", Op::FreeAll, Arg::None},     {"sync", Op::Sync, Arg::None},
    {"sleep", Op::Sleep, Arg::Millis},        {"print", Op::Print, Arg::Text},
    {"abort", Op::Abort, Arg::None},          {"exit", Op::Exit, Arg::Status},
    {"expect_fail", Op::ExpectFail, Arg::Size}, {"retry_ok", Op::RetryOk, Arg::Size},
    {"churn", Op::Churn, Arg::Index},         {"fill", Op::Fill, Arg::Text},
    {"remove", Op::Remove, Arg::Text},        {"fsize_limit", Op::FsizeLimit, Arg::Size},
    {"mark", Op::Mark, Arg::Text},            {"push", Op::Push, Arg::Text},
    {"pop", Op::Pop, Arg::None},              {"cancelled_alloc", Op::CancelledAlloc, Arg::Size},
    {"wait", Op::Wait, Arg::Text},
    {"sigterm_exit", Op::SigtermExit, Arg::Status}, {"raise_in", Op::RaiseIn, Arg::Text},
    {"nofile", Op::Nofile, Arg::Index},       {"open_null", Op::OpenNull, Arg::None},
    {"exhaust_fds", Op::ExhaustFds, Arg::None},
};

struct Step {
  Op op;
  std::string token;  // as given, for messages
  unsigned long long number = 0;
  std::string text;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "prog_ops: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: prog_ops OP [OP...]; OP: alloc:SIZE alloc_async:SIZE free:I free_last "
               "free_all sync sleep:MS print:TEXT abort exit:N expect_fail:SIZE retry_ok:SIZE churn:N "
               "fill:PATH remove:PATH fsize_limit:SIZE mark:NAME push:NAME pop cancelled_alloc:SIZE wait:PATH "
               "sigterm_exit:N raise_in:NAME nofile:N open_null exhaust_fds\n");
  std::exit(2);
}

// Unsigned decimal with an optional K/M/G/T suffix (only when `suffix`); false on anything else,
// including overflow.
bool parse_number(const std::string& s, bool suffix, unsigned long long* out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno == ERANGE) return false;
  int shift = 0;
  if (*end != '\0') {
    if (!suffix || end[1] != '\0') return false;
    switch (*end) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: return false;
    }
  }
  if (shift != 0 && v > (~0ULL >> shift)) return false;
  *out = v << shift;
  return true;
}

Step parse(const std::string& token) {
  const size_t colon = token.find(':');
  const std::string name = token.substr(0, colon);
  const bool has_arg = colon != std::string::npos;
  const std::string arg = has_arg ? token.substr(colon + 1) : std::string();
  for (const OpSpec& spec : kOps) {
    if (name != spec.name) continue;
    Step step{spec.op, token, 0, {}};
    if (spec.arg == Arg::None) {
      if (has_arg) usage_error("'" + token + "': " + name + " takes no argument");
      return step;
    }
    if (!has_arg) usage_error("'" + token + "': " + name + " needs ':' and an argument");
    switch (spec.arg) {
      case Arg::Text:
        step.text = arg;
        break;
      case Arg::Size:
        if (!parse_number(arg, true, &step.number)) {
          usage_error("'" + token + "': SIZE must be a number of bytes, optionally with K/M/G/T");
        }
        break;
      case Arg::Status:
        if (!parse_number(arg, false, &step.number) || step.number > 255) {
          usage_error("'" + token + "': exit status must be 0..255");
        }
        break;
      default:  // Index, Millis
        if (!parse_number(arg, false, &step.number)) {
          usage_error("'" + token + "': expected a non-negative integer");
        }
        break;
    }
    return step;
  }
  usage_error("unknown op '" + token + "'");
}

void say(const char* fmt, const std::string& s) {
  std::printf(fmt, s.c_str());
  std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& why) {
  std::fflush(stdout);
  std::fprintf(stderr, "prog_ops: %s\n", why.c_str());
  std::exit(1);
}

// The status sigterm_exit's handler exits with.
volatile sig_atomic_t g_sigterm_status = 0;

void exit_on_sigterm(int) { std::exit(g_sigterm_status); }

struct Runner {
  DriverTable t;
  std::vector<CUdeviceptr> list;  // 0 = hole (freed)

  void need(const void* fn, const char* name) {
    if (fn == nullptr) fail(std::string("the driver table has no ") + name);
  }

  void init() {
    std::string error;
    gmp::LoadOptions options;
    options.require_fake_hooks = false;  // also runs on a real driver
    options.allow_missing = true;        // only what is used is required (checked below)
    if (!gmp::load_driver(gmp::LoadMode::CudartStyle, t, &error, options)) fail(error);
    need(reinterpret_cast<const void*>(t.cuInit), "cuInit");
    need(reinterpret_cast<const void*>(t.cuDeviceGet), "cuDeviceGet");
    need(reinterpret_cast<const void*>(t.cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain");
    need(reinterpret_cast<const void*>(t.cuCtxSetCurrent), "cuCtxSetCurrent");
    need(reinterpret_cast<const void*>(t.cuMemAlloc_v2), "cuMemAlloc_v2");
    need(reinterpret_cast<const void*>(t.cuMemFree_v2), "cuMemFree_v2");
    gmp::make_primary_context_current(t);
  }

  static std::string hex(CUdeviceptr p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(p));
    return buf;
  }

  // Pushes on success; prints `alloc failed N` on failure.
  void alloc(const Step& s, bool async) {
    CUdeviceptr p = 0;
    CUresult r;
    if (async) {
      need(reinterpret_cast<const void*>(t.cuMemAllocAsync), "cuMemAllocAsync");
      r = t.cuMemAllocAsync(&p, static_cast<size_t>(s.number), CU_STREAM_LEGACY);
    } else {
      r = t.cuMemAlloc_v2(&p, static_cast<size_t>(s.number));
    }
    if (r != CUDA_SUCCESS) {
      say("alloc failed %s\n", std::to_string(static_cast<int>(r)));
      return;
    }
    if (p == 0) fail(s.token + ": success with a null pointer");
    list.push_back(p);
  }

  void release(size_t i, const std::string& token) {
    const CUresult r = t.cuMemFree_v2(list[i]);
    if (r != CUDA_SUCCESS) {
      fail(token + ": cuMemFree_v2(" + hex(list[i]) + ") of entry " + std::to_string(i) +
           " returned " + gmp::cu_result_name(r) + " (" + std::to_string(static_cast<int>(r)) + ")");
    }
    list[i] = 0;
  }

  void churn(unsigned long long n) {
    for (unsigned long long i = 0; i < n; ++i) {
      CUdeviceptr p = 0;
      CK(t.cuMemAlloc_v2(&p, size_t{1} << 20));
      CK(t.cuMemFree_v2(p));
    }
  }

  static void fill(const Step& s) {
    const int fd = open(s.text.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) fail(s.token + ": " + std::strerror(errno));
    static const char zeros[4096] = {};
    while (write(fd, zeros, sizeof zeros) > 0) {
    }
    const int err = errno;
    close(fd);
    if (err != ENOSPC && err != EDQUOT) fail(s.token + ": " + std::strerror(err));
  }

  static void remove_tree(const Step& s) {
    const auto remove_one = [](const char* path, const struct stat*, int, FTW*) { return ::remove(path); };
    if (nftw(s.text.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0) fail(s.token + ": " + std::strerror(errno));
  }

  static void fsize_limit(const Step& s) {
    rlimit lim{};
    if (getrlimit(RLIMIT_FSIZE, &lim) != 0) fail(s.token + ": " + std::strerror(errno));
    lim.rlim_cur = static_cast<rlim_t>(s.number);
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) fail(s.token + ": " + std::strerror(errno));
  }

  static void wait_for(const Step& s) {
    for (int ms = 0; access(s.text.c_str(), F_OK) != 0; ++ms) {
      if (ms == 60000) fail(s.token + ": still missing after 60 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  void raise_in(const Step& s) const {
    if (t.fakecuda_raise_in == nullptr) fail(s.token + ": the driver has no fakecuda_raise_in (not the fake?)");
    t.fakecuda_raise_in(s.text.c_str(), SIGTERM);
  }

  static void nofile(const Step& s) {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) fail(s.token + ": " + std::strerror(errno));
    lim.rlim_cur = static_cast<rlim_t>(s.number);
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) fail(s.token + ": " + std::strerror(errno));
  }

  static void exhaust_fds(const Step& s) {
    while (open("/dev/null", O_RDONLY) >= 0) {
    }
    if (errno != EMFILE) fail(s.token + ": " + std::strerror(errno));
  }

  void run(const Step& s) {
    switch (s.op) {
      case Op::Alloc: alloc(s, false); break;
      case Op::AllocAsync: alloc(s, true); break;
      case Op::Free:
        if (s.number >= list.size()) {
          fail(s.token + ": no entry " + std::to_string(s.number) + " (" +
               std::to_string(list.size()) + " allocated)");
        }
        if (list[s.number] == 0) fail(s.token + ": entry " + std::to_string(s.number) + " already freed");
        release(static_cast<size_t>(s.number), s.token);
        break;
      case Op::FreeLast: {
        size_t i = list.size();
        while (i > 0 && list[i - 1] == 0) --i;
        if (i == 0) fail(s.token + ": nothing live");
        release(i - 1, s.token);
        break;
      }
      case Op::FreeAll:
        for (size_t i = 0; i < list.size(); ++i) {
          if (list[i] != 0) release(i, s.token);
        }
        break;
      case Op::Sync:
        if (t.cuCtxSynchronize_v2 != nullptr) {
          CK(t.cuCtxSynchronize_v2(nullptr));
        } else {
          need(reinterpret_cast<const void*>(t.cuStreamSynchronize), "cuStreamSynchronize");
          CK(t.cuStreamSynchronize(CU_STREAM_LEGACY));
        }
        break;
      case Op::Sleep: std::this_thread::sleep_for(std::chrono::milliseconds(s.number)); break;
      case Op::Print: say("%s\n", s.text); break;
      case Op::Mark: gpumemprof_mark(s.text.c_str()); break;
      case Op::Push: gpumemprof_range_push(s.text.c_str()); break;
      case Op::Pop: gpumemprof_range_pop(); break;
      case Op::Abort:
        std::fflush(stdout);
        std::abort();
      case Op::Exit: std::exit(static_cast<int>(s.number));
      case Op::CancelledAlloc: {
        struct Job {
          const DriverTable* t;
          CUcontext ctx;
          size_t size;
          std::atomic<bool> go{false};
        } job{&t, nullptr, static_cast<size_t>(s.number)};
        CK(t.cuCtxGetCurrent(&job.ctx));
        pthread_t th;
        auto body = [](void* arg) -> void* {
          auto* j = static_cast<Job*>(arg);
          j->t->cuCtxSetCurrent(j->ctx);
          while (!j->go.load()) {
          }  // no cancellation point before the driver call
          CUdeviceptr p = 0;
          j->t->cuMemAlloc_v2(&p, j->size);
          pthread_testcancel();
          return nullptr;
        };
        if (pthread_create(&th, nullptr, body, &job) != 0) fail(s.token + ": pthread_create");
        pthread_cancel(th);
        job.go.store(true);
        void* ret = nullptr;
        pthread_join(th, &ret);
        if (ret == PTHREAD_CANCELED) say("%s\n", std::string("cancelled"));
        break;
      }
      case Op::ExpectFail: {
        CUdeviceptr p = 0;
        const CUresult r = t.cuMemAlloc_v2(&p, static_cast<size_t>(s.number));
        if (r != CUDA_ERROR_OUT_OF_MEMORY) {
          fail(s.token + ": cuMemAlloc_v2 returned " + gmp::cu_result_name(r) + " (" +
               std::to_string(static_cast<int>(r)) + "), expected CUDA_ERROR_OUT_OF_MEMORY");
        }
        break;
      }
      case Op::Churn: churn(s.number); break;
      case Op::Fill: fill(s); break;
      case Op::Remove: remove_tree(s); break;
      case Op::FsizeLimit: fsize_limit(s); break;
      case Op::Wait: wait_for(s); break;
      case Op::SigtermExit:
        g_sigterm_status = static_cast<sig_atomic_t>(s.number);
        signal(SIGTERM, exit_on_sigterm);
        break;
      case Op::RaiseIn: raise_in(s); break;
      case Op::Nofile: nofile(s); break;
      case Op::OpenNull: {
        const int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) fail(s.token + ": " + std::strerror(errno));
        say("fd %s\n", std::to_string(fd));
        break;
      }
      case Op::ExhaustFds: exhaust_fds(s); break;
      case Op::RetryOk: {
        CUdeviceptr p = 0;
        CK(t.cuMemAlloc_v2(&p, static_cast<size_t>(s.number)));
        if (p == 0) fail(s.token + ": success with a null pointer");
        list.push_back(p);
        break;
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage_error("no ops given");
  std::vector<Step> steps;
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) steps.push_back(parse(argv[i]));
  try {
    Runner runner;
    runner.init();
    for (const Step& s : steps) runner.run(s);
  } catch (const gmp::CheckFailure& e) {
    fail(e.what());
  }
  say("%s\n", "ok");
  return 0;
}
