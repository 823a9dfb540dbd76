#include "trace_reader.h"

#include <cerrno>
#include <cstring>

#include "input_file.h"

namespace gmp::reader {

namespace {
constexpr size_t kBlockEvents = 16384;

bool is_valid(const Event& e) {
  static constexpr Event kZero{};
  return static_cast<unsigned>(e.kind) < static_cast<unsigned>(kKindCount) && std::memcmp(&e, &kZero, sizeof e) != 0;
}
}  // namespace

TraceReader::~TraceReader() {
  if (file_ != nullptr) fclose(file_);
}

bool TraceReader::open(const std::string& path) {
  path_ = path;
  InputFile input;
  if (!input.open(path)) {
    error_ = input.error();
    return false;
  }
  const uint64_t size = input.size();
  file_ = fdopen(input.fd(), "rb");
  if (file_ == nullptr) {
    error_ = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  input.release();  // file_ owns it now
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
  records_in_file_ = size > header_.header_size ? (size - header_.header_size) / sizeof(Event) : 0;
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
    if (std::ferror(file_)) {
      error_ = "cannot read " + path_ + ": " + std::strerror(errno);
      failed_ = true;
      return false;
    }
  }
  block_.resize(bytes / sizeof(Event));
  pos_ = 0;
  return !block_.empty();
}

bool TraceReader::next(Event& out) {
  for (;;) {
    if (failed_ || (pos_ >= block_.size() && !refill())) return false;
    const Event& e = block_[pos_++];
    if (!is_valid(e)) {
      ++invalid_;
      if (++invalid_run_ >= kMaxInvalidRun) {
        const uint64_t at = header_.header_size + (read_ + invalid_ - invalid_run_) * sizeof(Event);
        error_ = path_ + " is corrupt: " + std::to_string(invalid_run_) + " records in a row from byte " +
                 std::to_string(at) + " are all zero or of no known kind; gpumemprof writes neither";
        failed_ = true;
        return false;
      }
      continue;
    }
    invalid_run_ = 0;
    out = e;
    ++read_;
    return true;
  }
}

}  // namespace gmp::reader
