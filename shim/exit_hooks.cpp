// How the process ends, for summary.json.
//
// _exit, _Exit and quick_exit end the process without running exit handlers or library
// destructors, so our exit-time flush (shim_lifecycle.cpp) never runs and the events still in the
// ring would be lost. Each first has the collector drain what was recorded and write summary.json
// ("ended_by": "exit_call"), bounded and async-signal-safe (programs call _exit from signal
// handlers and in forked children; a child that never used CUDA has no session and pays
// nothing). exit() reaches _exit inside glibc, not through these, after our destructor has run.
// A raw exit_group or execve system call cannot be seen: the reader then finds no summary.json
// and says that the end of the trace may be missing.
//
// The exit status ("exit_status"): main's return value, seen by wrapping main through
// __libc_start_main (glibc then calls exit from inside itself, where no hook can see it), and the
// argument of exit(), _exit(), _Exit() or quick_exit() called from anywhere else. Each only notes
// a number; the status and behaviour of the program are unchanged. A statically linked program or
// one with its own entry point never calls our __libc_start_main: its status is then unknown
// unless it calls exit().
#include <dlfcn.h>

#include <cstdlib>

#include "../collector/seam.h"
#include "export.h"
#include "real_driver.h"

namespace {

using ExitFn = void (*)(int);
using MainFn = int (*)(int, char**, char**);
using StartMainFn = int (*)(MainFn, int, char**, void (*)(), void (*)(), void (*)(), void*);

ExitFn real_exit_fn(const char* name) { return reinterpret_cast<ExitFn>(gmp::shim::real_dlsym()(RTLD_NEXT, name)); }

[[noreturn]] void end_through(const char* name, int status) {
  gmp::session_note_exit_status(status);
  gmp::session_end_by_exit_call();
  real_exit_fn(name)(status);
  __builtin_unreachable();
}

MainFn g_main = nullptr;  // set once, before main runs, by the only thread there is then

int main_noting_its_status(int argc, char** argv, char** envp) {
  const int status = g_main(argc, argv, envp);
  gmp::session_note_exit_status(status);
  gmp::session_process_exiting();
  return status;
}

}  // namespace

GMP_EXPORT void _exit(int status) { end_through("_exit", status); }
GMP_EXPORT void _Exit(int status) { end_through("_Exit", status); }
GMP_EXPORT void quick_exit(int status) { end_through("quick_exit", status); }

GMP_EXPORT void exit(int status) {
  gmp::session_note_exit_status(status);
  gmp::session_process_exiting();
  real_exit_fn("exit")(status);
  __builtin_unreachable();
}

// The old and the new (GLIBC_2.34) version are one function with one signature; the executable's
// own init and fini pass through untouched.
GMP_EXPORT int __libc_start_main(MainFn main, int argc, char** argv, void (*init)(), void (*fini)(),
                                 void (*rtld_fini)(), void* stack_end) {
  auto real = reinterpret_cast<StartMainFn>(gmp::shim::real_dlsym()(RTLD_NEXT, "__libc_start_main"));
  g_main = main;
  return real(main != nullptr ? main_noting_its_status : nullptr, argc, argv, init, fini, rtld_fini, stack_end);
}
