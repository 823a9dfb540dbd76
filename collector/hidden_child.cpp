#include "hidden_child.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace gmp {
namespace {

constexpr size_t kStackSize = 64 * 1024;

struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  int stdin_fd, out_fd;
  char* command_stack_top;
  int error;  // written by the intermediate or the command (shared memory) on failure
};

void move_fd(int from, int to) {
  if (from != to) syscall(SYS_dup3, from, to, 0);  // dup3 clears close-on-exec on `to`
}

// These run sharing our memory while their parent is suspended: plain system calls only (no
// locks, no allocation). (syscall() sets errno on failure, the suspended thread's copy: harmless.)
int command_main(void* arg) {
  auto* plan = static_cast<ChildPlan*>(arg);
  const uint64_t empty_mask = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty_mask, nullptr, sizeof empty_mask);
  move_fd(plan->stdin_fd, 0);
  move_fd(plan->out_fd, 1);
  move_fd(plan->out_fd, 2);
  syscall(SYS_execve, plan->path, plan->argv, plan->envp);
  plan->error = errno;
  syscall(SYS_exit, 127);
  return 127;
}

int intermediate_main(void* arg) {
  auto* plan = static_cast<ChildPlan*>(arg);
  if (clone(command_main, plan->command_stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, plan) < 0) plan->error = errno;
  syscall(SYS_exit, 0);  // orphans the command: it is re-parented, never the program's child
  return 0;
}

}  // namespace

std::string find_executable(const std::string& name) {
  auto runnable = [](const std::string& p) {
    struct stat st {};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return runnable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (runnable(candidate)) return candidate;
  }
  return "";
}

bool start_hidden_child(const std::string& path, char* const argv[], char* const envp[], int stdin_fd, int out_fd,
                        int* error) {
  // One mapping, two stacks: the intermediate's (upper half) and the command's (lower half).
  void* stacks = mmap(nullptr, 2 * kStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stacks == MAP_FAILED) {
    *error = errno;
    return false;
  }
  char* base = static_cast<char*>(stacks);
  ChildPlan plan{path.c_str(), argv, envp, stdin_fd, out_fd, base + kStackSize, 0};
  // No exit signal in the flags: a clone child (see the header). CLONE_VFORK: we resume once it
  // has exited, by when the command has called execve (or failed to).
  const pid_t pid = clone(intermediate_main, base + 2 * kStackSize, CLONE_VM | CLONE_VFORK, &plan);
  const int clone_errno = errno;
  if (pid > 0) {
    int status;
    while (waitpid(pid, &status, __WCLONE) < 0 && errno == EINTR) {
    }
  }
  munmap(stacks, 2 * kStackSize);
  if (pid < 0) plan.error = clone_errno;
  *error = plan.error;
  return plan.error == 0;
}

}  // namespace gmp
