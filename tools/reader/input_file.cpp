#include "input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace gmp::reader {
namespace {

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile::InputFile(InputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), missing_(other.missing_), error_(std::move(other.error_)) {
}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    missing_ = other.missing_;
    error_ = std::move(other.error_);
  }
  return *this;
}

int InputFile::release() { return std::exchange(fd_, -1); }

bool InputFile::open(const std::string& path, Holes holes) {
  // O_NOCTTY: a terminal named as an input must not become our controlling terminal.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    missing_ = errno == ENOENT || errno == ENOTDIR;
    error_ = missing_ ? path + " does not exist" : "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    error_ = "cannot read " + path + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error_ = path + " is " + file_type(st.st_mode) + ", not a regular file; gpumemprof reads only regular files";
    ::close(fd);
    return false;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (holes == Holes::Refuse && size > 0) {
    const off_t hole = lseek(fd, 0, SEEK_HOLE);  // the end of the file when there is no hole
    if (hole >= 0 && static_cast<uint64_t>(hole) < size) {
      error_ = path + " is a sparse file (" + std::to_string(size) + " bytes with a hole at byte " +
               std::to_string(hole) + "); gpumemprof never writes holes, so it is not a file gpumemprof wrote";
      ::close(fd);
      return false;
    }
    lseek(fd, 0, SEEK_SET);
  }
  // Reads of a regular file never block; clearing the flag keeps later users (stdio) plain.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  fd_ = fd;
  size_ = size;
  return true;
}

std::optional<std::string> read_input_text(const std::string& path, std::string& error, bool* missing) {
  InputFile file;
  if (missing != nullptr) *missing = false;
  if (!file.open(path)) {
    if (missing != nullptr) *missing = file.missing();
    error = file.error();
    return std::nullopt;
  }
  std::string text;
  text.reserve(std::min<uint64_t>(file.size(), 64u << 20));  // the size is a hint: the file may change
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(file.fd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read " + path + ": " + std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace gmp::reader
