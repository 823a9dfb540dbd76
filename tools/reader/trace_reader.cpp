#include "trace_reader.h"

#include <cerrno>
#include <cstring>

namespace gmp::reader {

namespace {
constexpr size_t kBlockEvents = 16384;
}

TraceReader::~TraceReader() {
  if (file_ != nullptr) fclose(file_);
}

bool TraceReader::open(const std::string& path) {
  file_ = fopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    error_ = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  const size_t got = fread(&header_, 1, sizeof header_, file_);
  if (got < sizeof header_) {
    error_ = path + " is truncated: " + std::to_string(got) + " bytes, shorter than the 64-byte trace header";
    return false;
  }
  if (std::memcmp(header_.magic, kTraceMagic, sizeof header_.magic) != 0) {
    error_ = path + " is not a gpumemprof trace (bad magic)";
    return false;
  }
  if (header_.version != kTraceVersion || header_.event_size != sizeof(Event) ||
      header_.header_size < sizeof(TraceHeader)) {
    error_ = path + " has trace version " + std::to_string(header_.version) + " with " +
             std::to_string(header_.event_size) + "-byte events; this reader understands version " +
             std::to_string(kTraceVersion) + " with 64-byte events";
    return false;
  }
  if (header_.header_size > sizeof(TraceHeader) && fseek(file_, header_.header_size, SEEK_SET) != 0) {
    error_ = path + ": cannot skip the header";
    return false;
  }
  return true;
}

bool TraceReader::refill() {
  if (eof_ || file_ == nullptr) return false;
  block_.resize(kBlockEvents);
  const size_t want = block_.size() * sizeof(Event);
  const size_t bytes = fread(block_.data(), 1, want, file_);
  if (bytes < want) {
    eof_ = true;
    truncated_ = bytes % sizeof(Event);
  }
  block_.resize(bytes / sizeof(Event));
  pos_ = 0;
  return !block_.empty();
}

bool TraceReader::next(Event& out) {
  for (;;) {
    if (pos_ >= block_.size() && !refill()) return false;
    const Event& e = block_[pos_++];
    if (static_cast<unsigned>(e.kind) >= static_cast<unsigned>(kKindCount)) {
      ++invalid_;
      continue;
    }
    out = e;
    ++read_;
    return true;
  }
}

}  // namespace gmp::reader
