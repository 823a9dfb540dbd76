// _exit, _Exit and quick_exit end the process without running exit handlers or library
// destructors, so our exit-time flush (shim_lifecycle.cpp) never runs and the events still in the
// ring would be lost. Each first has the collector drain what was recorded and write summary.json
// ("ended_by": "exit_call"), bounded and async-signal-safe (programs call _exit from signal
// handlers and in forked children; a child that never used CUDA has no session and pays
// nothing). exit() reaches _exit inside glibc, not through these, after our destructor has run.
// A raw exit_group or execve system call cannot be seen: the reader then finds no summary.json
// and says that the end of the trace may be missing.
#include <dlfcn.h>

#include <cstdlib>

#include "../collector/session.h"
#include "export.h"
#include "real_driver.h"

namespace {

using ExitFn = void (*)(int);

[[noreturn]] void end_through(const char* name, int status) {
  gmp::session_end_by_exit_call();
  reinterpret_cast<ExitFn>(gmp::shim::real_dlsym()(RTLD_NEXT, name))(status);
  __builtin_unreachable();
}

}  // namespace

GMP_EXPORT void _exit(int status) { end_through("_exit", status); }
GMP_EXPORT void _Exit(int status) { end_through("_Exit", status); }
GMP_EXPORT void quick_exit(int status) { end_through("quick_exit", status); }
