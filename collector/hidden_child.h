// Starting a command (GPUMEMPROF_ON_ALERT) so that the profiled program never notices it.
//
// A child started the usual way (fork, posix_spawn) is the program's child too: the program's own
// wait(-1) can reap it instead of the child it is waiting for, and the program gets a SIGCHLD it
// did not cause. So the command is started by a short-lived intermediate, a double fork:
//   - the intermediate is created with clone() and no exit signal. Linux treats such a process as
//     a "clone child", which wait(), waitpid(-1, ...) and waitid(P_ALL, ...) ignore unless the
//     caller passes __WALL or __WCLONE, and whose exit sends no SIGCHLD. We reap it with
//     __WCLONE. (It cannot be the command itself: execve turns a clone child into an ordinary
//     one.)
//   - the intermediate starts the command and exits at once, so the command is re-parented to
//     init (or to the nearest "child subreaper", which is the program only if the program made
//     itself one with PR_SET_CHILD_SUBREAPER) and reaped there, never by the program.
// Both share our memory and suspend their parent until the next one has called execve or exited
// (CLONE_VM | CLONE_VFORK, as posix_spawn does), so a large process is never copied, and until
// execve they make system calls only. The command's signal mask is cleared (the collector thread
// blocks every signal), its standard input is the given descriptor and its output goes to
// `out_fd`, never to the program's stdout or stderr.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gmp {

// The executable `name` names: itself if it contains '/', else the first match on PATH
// (as execvp would find it); "" if none.
std::string find_executable(const std::string& name);

// Starts `path` with `argv` and `envp` (both null-terminated) and returns once it runs (nothing
// is left to reap). False with `error` set to the errno of the failure (exec included).
bool start_hidden_child(const std::string& path, char* const argv[], char* const envp[], int stdin_fd, int out_fd,
                        int* error);

}  // namespace gmp
