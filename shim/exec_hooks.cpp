// exec replaces the process image without running exit handlers, so events still in the ring
// would be lost. Each exec entry point first drains the ring and writes summary.json; the new
// image inherits LD_PRELOAD and records into its own run directory. If exec fails, the session
// simply carries on.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <vector>

#include "../collector/seam.h"
#include "export.h"
#include "real_driver.h"

namespace {

template <typename Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(gmp::shim::real_dlsym()(RTLD_NEXT, name));
}

using ExecVE = int (*)(const char*, char* const[], char* const[]);
using ExecV = int (*)(const char*, char* const[]);

// execl-style varargs up to the terminating NULL; `envp` receives the pointer after it if asked.
std::vector<char*> collect_args(const char* arg0, va_list ap, char* const** envp) {
  std::vector<char*> args{const_cast<char*>(arg0)};
  while (char* a = va_arg(ap, char*)) args.push_back(a);
  args.push_back(nullptr);
  if (envp != nullptr) *envp = va_arg(ap, char* const*);
  return args;
}

}  // namespace

GMP_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  gmp::session_checkpoint();
  return next<ExecVE>("execve")(path, argv, envp);
}

GMP_EXPORT int execv(const char* path, char* const argv[]) {
  gmp::session_checkpoint();
  return next<ExecV>("execv")(path, argv);
}

GMP_EXPORT int execvp(const char* file, char* const argv[]) {
  gmp::session_checkpoint();
  return next<ExecV>("execvp")(file, argv);
}

GMP_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  gmp::session_checkpoint();
  return next<ExecVE>("execvpe")(file, argv, envp);
}

GMP_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  gmp::session_checkpoint();
  return next<int (*)(int, char* const[], char* const[])>("fexecve")(fd, argv, envp);
}

GMP_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  auto args = collect_args(arg, ap, nullptr);
  va_end(ap);
  return execv(path, args.data());
}

GMP_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  auto args = collect_args(arg, ap, nullptr);
  va_end(ap);
  return execvp(file, args.data());
}

GMP_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char* const* envp = nullptr;
  auto args = collect_args(arg, ap, &envp);
  va_end(ap);
  return execve(path, args.data(), envp);
}
