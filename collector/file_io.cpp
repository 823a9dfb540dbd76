#include "file_io.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

bool write_file_atomic(const std::string& path, std::string_view content, mode_t mode) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return false;
  bool ok = write_all(fd, content.data(), content.size());
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    const int err = errno;  // the write's reason, not the clean-up's
    ::unlink(tmp.c_str());
    errno = err;
  }
  return ok;
}

}  // namespace gmp
