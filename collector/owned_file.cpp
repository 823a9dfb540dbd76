#include "owned_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "file_io.h"
#include "high_fd.h"

namespace gmp {

OwnedFile::~OwnedFile() { close(); }

namespace {
int open_flags(bool in_place) { return O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (in_place ? 0 : O_APPEND); }
}  // namespace

bool OwnedFile::create(const OwnedDir& dir, const std::string& name, bool exclusive, bool in_place) {
  const int flags = open_flags(in_place) | O_CREAT | (exclusive ? O_EXCL : 0);
  const int dirfd = dir.fd();
  if (dirfd < 0) return false;
  const int fd = ::openat(dirfd, name.c_str(), flags, 0600);
  if (fd < 0) return false;
  struct stat st {};
  const int err = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;  // a device is no file of ours
  if (err != 0) {
    ::close(fd);
    errno = err;
    return false;
  }
  dir_ = &dir;
  name_ = name;
  path_ = dir.shown(name);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  size_ = st.st_size;
  in_place_ = in_place;
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
  const int dirfd = dir_ != nullptr ? dir_->fd() : -1;
  if (dirfd < 0) return false;
  const int fd = ::openat(dirfd, name_.c_str(), open_flags(in_place_));
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

int OwnedFile::usable() {
  switch (held()) {
    case Held::Ours: return fd_;
    case Held::Removed: errno = ENOENT; return -1;
    case Held::Lost: return reopen() ? fd_ : -1;
  }
  return -1;
}

bool OwnedFile::append(const void* data, size_t size) {
  if (usable() < 0) return false;
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

int OwnedFile::allocate(uint64_t bytes) {
  if (usable() < 0) return errno;
  const int err = posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
  if (err == 0) size_ = std::max<off_t>(size_, static_cast<off_t>(bytes));
  return err;
}

void OwnedFile::close() {
  if (fd_ >= 0 && held() != Held::Lost) ::close(fd_);
  fd_ = -1;
}

}  // namespace gmp
