#include "owned_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "high_fd.h"

namespace gmp {

OwnedDir::~OwnedDir() { close(); }

void OwnedDir::close() {
  const int fd = fd_.exchange(-1, std::memory_order_acq_rel);
  if (fd >= 0 && ours(fd)) ::close(fd);
  adopted_ = false;
}

bool OwnedDir::adopt(Fd fd, const std::string& path, uid_t self) {
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) return false;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  self_ = self;
  path_ = path;
  fd_.store(move_high(fd.release()), std::memory_order_release);
  adopted_ = true;
  return true;
}

bool OwnedDir::open(const std::string& path, uid_t self, std::string& error, bool create) {
  Fd fd = open_trusted_dir(path, self, error, create);
  if (!fd) return false;
  if (!adopt(std::move(fd), path, self)) {
    error = "cannot examine '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

bool OwnedDir::ours(int fd) const {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == dev_ && st.st_ino == ino_;
}

int OwnedDir::fd() const {
  const int fd = fd_.load(std::memory_order_acquire);
  if (fd >= 0 && ours(fd)) return fd;
  if (!adopted_) {
    errno = EBADF;
    return -1;
  }
  return reopen(fd);
}

int OwnedDir::reopen(int lost) const {
  // `lost` is the program's number now (or -1): never closed by us. Only the very directory we
  // checked is taken back, wherever its path leads now.
  std::string error;
  Fd again = open_trusted_dir(path_, self_, error, /*create=*/false);
  struct stat st {};
  if (!again || fstat(again.get(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
    fd_.compare_exchange_strong(lost, -1, std::memory_order_acq_rel);
    errno = ENOENT;
    return -1;
  }
  const int fresh = move_high(again.release());
  if (fd_.compare_exchange_strong(lost, fresh, std::memory_order_acq_rel)) return fresh;
  ::close(fresh);  // another thread took it back first: `lost` now holds its descriptor
  return lost;
}

}  // namespace gmp
