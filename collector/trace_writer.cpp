#include "trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include "file_io.h"

namespace gmp {

TraceWriter::~TraceWriter() {
  if (fd_ >= 0) ::close(fd_);
}

bool TraceWriter::open(const std::string& path, const TraceHeader& header) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0 || !write_all(fd_, &header, sizeof header)) {
    failed_ = true;
    return false;
  }
  buffer_.reserve(4096);
  return true;
}

void TraceWriter::append(const Event& e) { buffer_.push_back(e); }

bool TraceWriter::flush() {
  if (buffer_.empty()) return !failed_;
  if (fd_ >= 0 && !failed_) {
    if (write_all(fd_, buffer_.data(), buffer_.size() * sizeof(Event))) {
      written_ += buffer_.size();
    } else {
      failed_ = true;  // disk full or similar: keep accounting, stop tracing
    }
  }
  buffer_.clear();
  return !failed_;
}

}  // namespace gmp
