#include "owned_file.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "file_io.h"

namespace gmp {
namespace {

// Moves `fd` to a high number (below the soft descriptor limit), where programs rarely dup2()
// or open; keeps it where it is when no such number is free.
int move_high(int fd) {
  constexpr rlim_t kPreferred = 900;  // under the common soft limit of 1024
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur <= kPreferred) return fd;
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(kPreferred));
  if (high < 0) return fd;
  ::close(fd);
  return high;
}

}  // namespace

OwnedFile::~OwnedFile() {
  if (held() != Held::Lost) ::close(fd_);
}

bool OwnedFile::create(const std::string& path, bool exclusive) {
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | (exclusive ? O_EXCL : 0);
  const int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) return false;
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return false;
  }
  path_ = path;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  size_ = st.st_size;
  fd_ = move_high(fd);
  return true;
}

OwnedFile::Held OwnedFile::held() const {
  struct stat st {};
  if (fd_ < 0 || fstat(fd_, &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) return Held::Lost;
  return st.st_nlink == 0 ? Held::Removed : Held::Ours;
}

bool OwnedFile::reopen() {
  fd_ = -1;  // the old number belongs to the program now: never close it
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st {};
  // Same inode and exactly the bytes we wrote: an inode number can be reused by a new file.
  if (fstat(fd, &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_ || st.st_size != size_) {
    ::close(fd);  // another file now has our name: not ours to write
    errno = ENOENT;  // ours is gone
    return false;
  }
  fd_ = move_high(fd);
  ++reopened_;
  return true;
}

bool OwnedFile::append(const void* data, size_t size) {
  switch (held()) {
    case Held::Ours: break;
    case Held::Removed: errno = ENOENT; return false;
    case Held::Lost:
      if (!reopen()) return false;
      break;
  }
  if (!write_all(fd_, data, size)) {
    // All or nothing: cut off whatever part did land (a disk that filled mid-write), so the file
    // holds only whole records. If even that fails, remember what is there.
    const int err = errno;
    struct stat st {};
    if (ftruncate(fd_, size_) != 0 && fstat(fd_, &st) == 0) size_ = st.st_size;
    errno = err;
    return false;
  }
  size_ += static_cast<off_t>(size);
  return true;
}

}  // namespace gmp
