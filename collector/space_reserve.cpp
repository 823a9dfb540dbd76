#include "space_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "file_io.h"

namespace gmp {

bool SpaceReserve::take(const OwnedDir& dir, std::string& error) {
  // Never more than RLIMIT_FSIZE: allocating past it would raise SIGXFSZ, which kills the program.
  const uint64_t bytes = std::min(kBytes, file_size_limit());
  int err = EFBIG;  // a limit of 0: no file of ours could hold anything
  if (bytes > 0) err = file_.create(dir, kFileName, /*exclusive=*/true) ? file_.allocate(bytes) : errno;
  if (err == 0) {
    held_ = true;
    return true;
  }
  file_.close();
  if (const int dirfd = dir.fd(); dirfd >= 0) ::unlinkat(dirfd, kFileName, 0);
  error = "cannot write into run directory '" + dir.path() + "': " + std::strerror(err);
  return false;
}

bool SpaceReserve::write_file(const OwnedDir& dir, const std::string& name, std::string_view content) {
  if (held_) file_.close();  // first: reaching the directory again may need a descriptor
  const int dirfd = dir.fd();
  if (held_ && dirfd >= 0) ::unlinkat(dirfd, kFileName, 0);
  held_ = false;
  if (dirfd < 0) return false;
  return write_file_atomic(dirfd, name, content);
}

}  // namespace gmp
