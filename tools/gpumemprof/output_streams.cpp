#include "output_streams.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <string_view>

#include "terminal_text.h"

namespace gmp::tool {
namespace {

struct Stream {
  int fd;
  bool text = true;
  TerminalFilter filter{true};
  int error = 0;  // the first failed write's errno
};

Stream g_stdout{STDOUT_FILENO};
Stream g_stderr{STDERR_FILENO};

bool write_all(Stream& s, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(s.fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (s.error == 0) s.error = n < 0 ? errno : EIO;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

ssize_t write_stream(void* cookie, const char* buf, size_t size) {
  Stream& s = *static_cast<Stream*>(cookie);
  if (!s.text) return write_all(s, {buf, size}) ? static_cast<ssize_t>(size) : -1;
  std::string shown;
  s.filter.feed({buf, size}, shown);
  return write_all(s, shown) ? static_cast<ssize_t>(size) : -1;
}

void end_text(Stream& s) {
  std::string tail;
  s.filter.finish(tail);
  if (!tail.empty()) write_all(s, tail);
}

// glibc documents stdout and stderr as ordinary variables that may be set.
FILE* routed(Stream& s, FILE* old, int mode) {
  FILE* f = fopencookie(&s, "w", cookie_io_functions_t{nullptr, write_stream, nullptr, nullptr});
  if (f == nullptr) return old;
  std::fflush(old);
  setvbuf(f, nullptr, mode, 0);
  return f;
}

}  // namespace

void route_output_streams() {
  stdout = routed(g_stdout, stdout, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF);  // as stdio does for a terminal
  stderr = routed(g_stderr, stderr, _IOLBF);  // each message leaves as one line
}

void stdout_carries_data() {
  std::fflush(stdout);
  end_text(g_stdout);
  g_stdout.text = false;
}

int finish_output_streams() {
  std::fflush(stderr);
  end_text(g_stderr);
  const bool flushed = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (g_stdout.text) end_text(g_stdout);
  if (g_stdout.error != 0) return g_stdout.error;
  return flushed ? 0 : EIO;
}

}  // namespace gmp::tool
