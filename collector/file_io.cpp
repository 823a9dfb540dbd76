#include "file_io.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>

namespace gmp {

uint64_t file_size_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return lim.rlim_cur;
}

namespace {

// Whether `size` more bytes fit in `fd` under RLIMIT_FSIZE. Writing past it would raise SIGXFSZ,
// whose default action kills the program, so we refuse such a write ourselves (EFBIG).
bool fits_file_size_limit(int fd, size_t size) {
  const uint64_t limit = file_size_limit();
  if (limit == UINT64_MAX) return true;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return true;
  const off_t here = lseek(fd, 0, SEEK_CUR);
  const uint64_t end = static_cast<uint64_t>(std::max<off_t>(st.st_size, here < 0 ? 0 : here));
  return end + size <= limit;
}

// Six characters of [A-Za-z0-9] from the kernel's random pool; where that fails (a kernel before
// 3.17, a seccomp filter), from the clock, the pid and a counter, which only we know in advance.
std::string random_suffix() {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[6];
  if (getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    static std::atomic<uint64_t> counter{0};
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(ts.tv_sec) << 30) ^
                 (static_cast<uint64_t>(getpid()) << 40) ^ counter.fetch_add(0x9e3779b97f4a7c15ull);
    for (unsigned char& b : bytes) {
      x ^= x >> 33;
      x *= 0xff51afd7ed558ccdull;
      b = static_cast<unsigned char>(x >> 56);
    }
  }
  std::string out;
  for (unsigned char b : bytes) out += kChars[b % (sizeof kChars - 1)];
  return out;
}

}  // namespace

bool write_all(int fd, const void* data, size_t size) {
  if (!fits_file_size_limit(fd, size)) {
    errno = EFBIG;
    return false;
  }
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int create_unpredictable(int dirfd, const std::string& prefix, const std::function<int(int, const char*)>& make,
                         std::string& name) {
  constexpr int kAttempts = 100;
  for (int i = 0; i < kAttempts; ++i) {
    name = prefix + random_suffix();
    const int r = make(dirfd, name.c_str());
    if (r >= 0 || errno != EEXIST) return r;
  }
  return -1;  // errno EEXIST
}

bool write_file_atomic(int dirfd, const std::string& name, std::string_view content, mode_t mode) {
  std::string tmp;
  const int fd = create_unpredictable(
      dirfd, "." + name + ".",
      [mode](int dir, const char* n) {
        return ::openat(dir, n, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode);
      },
      tmp);
  if (fd < 0) return false;
  bool ok = write_all(fd, content.data(), content.size());
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = ::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) == 0;
  if (!ok) {
    const int err = errno;  // the write's reason, not the clean-up's
    ::unlinkat(dirfd, tmp.c_str(), 0);
    errno = err;
  }
  return ok;
}

}  // namespace gmp
