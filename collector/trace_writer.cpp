#include "trace_writer.h"

#include <cerrno>
#include <cstring>

#include "log.h"

namespace gmp {

bool TraceWriter::open(const std::string& path, const TraceHeader& header) {
  path_ = path;
  buffer_.reserve(4096);
  if (!file_.create(path, /*exclusive=*/true)) {
    fail("cannot create", errno);
    return false;
  }
  if (!file_.append(&header, sizeof header)) {
    fail("cannot write", errno);
    return false;
  }
  return true;
}

void TraceWriter::fail(const std::string& what, int err) {
  failed_ = true;
  error_ = what + " " + path_ + ": " + std::strerror(err);
  log::error("{}; from here on events are counted in summary.json but not traced", error_);
}

bool TraceWriter::flush() {
  if (buffer_.empty()) return !failed_;
  if (!failed_) {
    if (file_.append(buffer_.data(), buffer_.size() * sizeof(Event))) {  // all of the batch or none
      written_ += buffer_.size();
      buffer_.clear();
      return true;
    }
    fail("cannot write", errno);
  }
  unwritten_ += buffer_.size();
  buffer_.clear();
  return false;
}

}  // namespace gmp
