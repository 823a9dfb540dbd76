#include "source_lines.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

extern char** environ;

namespace gmp::analysis {
namespace {

// addr2line on a large library with full DWARF can be slow; a report must still finish.
constexpr int kTimeoutMs = 60'000;

bool on_path(const char* name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

// The addresses, one per line, in an unlinked temporary file for addr2line's stdin: no pipe to
// feed while reading its output, so no deadlock on large batches.
int address_file(const std::vector<uint64_t>& vaddrs) {
  char name[] = "/tmp/gpumemprof-addr2line-XXXXXX";
  const int fd = mkstemp(name);
  if (fd < 0) return -1;
  unlink(name);
  std::string text;
  char buf[32];
  for (uint64_t a : vaddrs) {
    std::snprintf(buf, sizeof buf, "0x%llx\n", static_cast<unsigned long long>(a));
    text += buf;
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

// Runs addr2line on `elf_path` with the addresses on `input_fd`; false when it could not run,
// failed or took too long.
bool run_addr2line(const std::string& elf_path, int input_fd, std::string& out) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const char* argv[] = {"addr2line", "-a", "-f", "-C", "-i", "-e", elf_path.c_str(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "addr2line", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  bool timed_out = false;
  char buf[65536];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    const ssize_t n = read(pipe_fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  if (timed_out) kill(pid, SIGKILL);  // our own child, by its pid
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// "/src/a.cpp:12 (discriminator 3)" -> file, line; "??:0" and "??:?" -> nothing.
void parse_location(const std::string& loc, SourceLine& out) {
  std::string s = loc;
  const size_t paren = s.find(" (discriminator");
  if (paren != std::string::npos) s.resize(paren);
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) return;
  std::string file = s.substr(0, colon);
  if (file == "??" || file.empty()) return;
  out.file = std::move(file);
  out.line = static_cast<uint32_t>(std::strtoul(s.c_str() + colon + 1, nullptr, 10));
}

}  // namespace

bool addr2line_available() {
  const char* env = std::getenv("GPUMEMPROF_ADDR2LINE");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  static const bool found = on_path("addr2line");
  return found;
}

std::vector<std::vector<SourceLine>> parse_addr2line_output(const std::string& out, size_t count) {
  std::vector<std::vector<SourceLine>> groups;
  std::stringstream lines(out);
  std::string line, location;
  bool bad = false;
  while (std::getline(lines, line)) {
    if (line.rfind("0x", 0) == 0) {
      groups.emplace_back();
      continue;
    }
    // A function line, then its location line.
    if (groups.empty() || !std::getline(lines, location)) {
      bad = true;
      break;
    }
    SourceLine s;
    if (line != "??") s.function = line;
    parse_location(location, s);
    if (!s.function.empty() || !s.file.empty()) groups.back().push_back(std::move(s));
  }
  if (bad || groups.size() != count) return std::vector<std::vector<SourceLine>>(count);
  return groups;
}

std::vector<std::vector<SourceLine>> resolve_source_lines(const std::string& elf_path,
                                                          const std::vector<uint64_t>& vaddrs) {
  std::vector<std::vector<SourceLine>> none(vaddrs.size());
  if (vaddrs.empty() || !addr2line_available()) return none;
  const int input = address_file(vaddrs);
  if (input < 0) return none;
  std::string out;
  const bool ok = run_addr2line(elf_path, input, out);
  close(input);
  if (!ok) return none;
  return parse_addr2line_output(out, vaddrs.size());
}

}  // namespace gmp::analysis
