#include "space_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "file_io.h"

namespace gmp {

bool SpaceReserve::take(const std::string& dir, std::string& error) {
  const std::string path = dir + "/" + kFileName;
  // Never more than RLIMIT_FSIZE: allocating past it would raise SIGXFSZ, which kills the program.
  const uint64_t bytes = std::min(kBytes, file_size_limit());
  int err = EFBIG;  // a limit of 0: no file of ours could hold anything
  if (bytes > 0) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    err = fd < 0 ? errno : posix_fallocate(fd, 0, static_cast<off_t>(bytes));  // it writes zeros where unsupported
    if (fd >= 0) ::close(fd);
  }
  if (err == 0) {
    path_ = path;
    return true;
  }
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
  error = "cannot write into run directory '" + dir + "': " + std::strerror(err) + " (it was removed)";
  return false;
}

bool SpaceReserve::write_file(const std::string& path, std::string_view content) {
  if (!path_.empty()) {
    ::unlink(path_.c_str());
    path_.clear();
  }
  return write_file_atomic(path, content);
}

}  // namespace gmp
