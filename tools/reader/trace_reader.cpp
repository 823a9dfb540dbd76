#include "trace_reader.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "input_file.h"

namespace gmp::reader {

namespace {
constexpr size_t kBlockEvents = 16384;

bool is_valid(const Event& e) {
  static constexpr Event kZero{};
  return static_cast<unsigned>(e.kind) < static_cast<unsigned>(kKindCount) && std::memcmp(&e, &kZero, sizeof e) != 0;
}

// The segment files in `dir`, by segment number.
std::vector<std::pair<uint32_t, std::string>> segment_files(const std::string& dir) {
  std::vector<std::pair<uint32_t, std::string>> found;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return found;
  while (const dirent* entry = readdir(d)) {
    if (auto n = trace_segment_of(entry->d_name)) found.emplace_back(*n, entry->d_name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
}  // namespace

bool has_trace(const std::string& dir) { return !segment_files(dir).empty(); }

std::string TraceReader::files_text() const {
  if (segments_.empty()) return kTraceFileName;
  const auto name = [](const Segment& s) { return s.path.substr(s.path.rfind('/') + 1); };
  return segments_.size() == 1 ? name(segments_.front()) : name(segments_.front()) + " to " + name(segments_.back());
}

TraceReader::~TraceReader() {
  if (file_ != nullptr) fclose(file_);
}

bool TraceReader::add_segment(const std::string& path, bool first) {
  InputFile input;
  if (!input.open(path)) {
    error_ = input.error();
    vanished_ = input.missing();
    return false;
  }
  Segment s{path, {}, 0, input.size()};
  const ssize_t got = pread(input.fd(), &s.header, sizeof s.header, 0);
  if (got < static_cast<ssize_t>(sizeof s.header)) {
    error_ = path + " is truncated: " + std::to_string(std::max<ssize_t>(got, 0)) +
             " bytes, shorter than the 64-byte trace header";
    return false;
  }
  TraceHeader& h = s.header;
  if (std::memcmp(h.magic, kTraceMagic, sizeof h.magic) != 0) {
    error_ = path + " is not a gpumemprof trace (bad magic)";
    return false;
  }
  if (h.version < 1 || h.version > kTraceVersion || h.event_size != sizeof(Event) || h.header_size < sizeof(TraceHeader)) {
    error_ = path + " has trace version " + std::to_string(h.version) + " with " + std::to_string(h.event_size) +
             "-byte events; this reader understands versions 1 to " + std::to_string(kTraceVersion) +
             " with 64-byte events";
    return false;
  }
  if (h.version == 1) {  // one file: the fields that came later were reserved zeros
    h.segment = h.checkpoint_size = 0;
    h.first_event = 0;
  }
  s.events_offset = h.header_size + checkpoint_padded(h.checkpoint_size);
  if (s.events_offset > s.size) {
    error_ = path + " is truncated: its checkpoint of " + std::to_string(h.checkpoint_size) +
             " bytes runs past the end of the file";
    return false;
  }
  if (!first) {
    // A segment continues the one before it: same run, next number, its first record right after.
    const Segment& prev = segments_.back();
    const uint64_t prev_records = (prev.size - prev.events_offset) / sizeof(Event);
    if (h.pid != prev.header.pid || h.start_monotonic_ns != prev.header.start_monotonic_ns ||
        h.segment != prev.header.segment + 1 || h.first_event != prev.header.first_event + prev_records) {
      stopped_at_ = path + " does not continue " + prev.path + "; reading stops before it";
      return true;
    }
  }
  records_in_file_ += (s.size - s.events_offset) / sizeof(Event);
  s.file = std::move(input);
  segments_.push_back(std::move(s));
  return true;
}

bool TraceReader::open_segments(const std::string& dir) {
  const auto files = segment_files(dir);
  if (files.empty()) {
    error_ = dir + " holds no trace (" + kTraceFileName + ")";
    return false;
  }
  for (size_t i = 0; i < files.size() && stopped_at_.empty(); ++i) {
    const std::string file = dir + "/" + files[i].second;
    if (i > 0 && files[i].first != files[i - 1].first + 1) {
      stopped_at_ = dir + "/" + trace_segment_name(files[i - 1].first + 1) + " is missing; reading stops before it";
      break;
    }
    if (add_segment(file, i == 0)) continue;
    // The writer was killed while starting its last segment: the events before it are whole.
    if (i > 0 && i + 1 == files.size() && error_.find(" is truncated") != std::string::npos) {
      stopped_at_ = error_;
      error_.clear();
      break;
    }
    return false;
  }
  return true;
}

bool TraceReader::open(const std::string& path) {
  if (!is_directory(path)) {
    if (!add_segment(path, true)) return false;
  } else {
    // A running process deletes its oldest segments as it writes (GPUMEMPROF_TRACE_MAX): one listed
    // and gone before it was opened means the kept window moved on. Listed again, it is read as it
    // is then; the segments opened stay readable whatever is deleted afterwards.
    constexpr int kAttempts = 20;
    for (int attempt = 1; !open_segments(path); ++attempt) {
      if (!vanished_ || attempt == kAttempts) return false;
      segments_.clear();
      records_in_file_ = 0;
      stopped_at_.clear();
      error_.clear();
      vanished_ = false;
    }
  }
  header_ = segments_.front().header;
  return open_segment(0);
}

bool TraceReader::open_segment(size_t i) {
  if (file_ != nullptr) fclose(file_);
  file_ = nullptr;
  const Segment& s = segments_[i];
  path_ = s.path;
  const int fd = dup(s.file.fd());  // the stream's own, closed with it
  file_ = fd >= 0 ? fdopen(fd, "rb") : nullptr;
  if (file_ == nullptr) {
    error_ = "cannot read " + s.path + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return false;
  }
  if (fseeko(file_, static_cast<off_t>(s.events_offset), SEEK_SET) != 0) {
    error_ = s.path + ": cannot skip the header";
    return false;
  }
  current_ = i;
  consumed_in_segment_ = 0;
  eof_ = false;
  return true;
}

bool TraceReader::seed(Accounting& acc) {
  const Segment& s = segments_.front();
  if (s.header.checkpoint_size == 0) return true;
  std::string bytes(s.header.checkpoint_size, '\0');
  const ssize_t got = pread(s.file.fd(), bytes.data(), bytes.size(), s.header.header_size);
  if (got != static_cast<ssize_t>(bytes.size()) || !acc.restore_checkpoint(bytes.data(), bytes.size())) {
    error_ = s.path + ": the checkpoint at its start (" + std::to_string(bytes.size()) +
             " bytes) is corrupt; the events after it cannot be accounted for";
    return false;
  }
  return true;
}

bool TraceReader::refill() {
  for (;;) {
    if (file_ == nullptr) return false;
    if (eof_) {
      if (current_ + 1 >= segments_.size()) return false;
      if (!open_segment(current_ + 1)) {
        failed_ = true;
        return false;
      }
    }
    block_.resize(kBlockEvents);
    const size_t want = block_.size() * sizeof(Event);
    const size_t bytes = fread(block_.data(), 1, want, file_);
    if (bytes < want) {
      eof_ = true;
      truncated_ += bytes % sizeof(Event);
      if (std::ferror(file_)) {
        error_ = "cannot read " + path_ + ": " + std::strerror(errno);
        failed_ = true;
        return false;
      }
    }
    block_.resize(bytes / sizeof(Event));
    pos_ = 0;
    if (!block_.empty()) return true;
  }
}

bool TraceReader::next(Event& out) {
  for (;;) {
    if (failed_ || (pos_ >= block_.size() && !refill())) return false;
    const Event& e = block_[pos_++];
    ++consumed_in_segment_;
    if (!is_valid(e)) {
      ++invalid_;
      if (++invalid_run_ >= kMaxInvalidRun) {
        const uint64_t at = segments_[current_].events_offset + (consumed_in_segment_ - invalid_run_) * sizeof(Event);
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
