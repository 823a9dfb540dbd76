#include "trace_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log.h"

namespace gmp {
namespace {

// A segment whose checkpoint leaves room for fewer events than this would be mostly checkpoint:
// the live table has outgrown the cap, and tracing stops instead (said once).
constexpr uint64_t kMinSegmentEvents = 1024;

}  // namespace

bool TraceWriter::open(const OwnedDir& dir, const TraceHeader& header, uint64_t max_bytes) {
  dir_ = &dir;
  header_ = header;
  max_bytes_ = max_bytes;
  buffer_.reserve(4096);
  return create_segment(std::string());
}

void TraceWriter::fail(const std::string& what, int err) {
  failed_ = true;
  error_ = err != 0 ? what + ": " + std::strerror(err) : what;
  log::error("{}; from here on events are counted in summary.json but not traced", error_);
}

bool TraceWriter::create_segment(const std::string& checkpoint) {
  const uint64_t fixed = sizeof(TraceHeader) + checkpoint_padded(checkpoint.size());
  uint64_t limit = UINT64_MAX / sizeof(Event);
  if (max_bytes_ != 0) {
    // A segment's file, header and checkpoint included, is an eighth of the cap, so seven full ones
    // stay beside the one being written; past a large checkpoint, at least kMinSegmentEvents.
    const uint64_t segment = trace_segment_bytes(max_bytes_);
    limit = std::max(segment > fixed ? (segment - fixed) / sizeof(Event) : 0, kMinSegmentEvents);
    if (fixed + limit * sizeof(Event) > max_bytes_) {
      fail("trace stopped: a segment's checkpoint of the live allocations takes " + std::to_string(fixed) +
               " bytes, too many for GPUMEMPROF_TRACE_MAX=" + std::to_string(max_bytes_),
           0);
      return false;
    }
    auto kept_bytes = [&] {
      uint64_t sum = 0;
      for (const Segment& s : kept_) sum += s.bytes;
      return sum;
    };
    // Room first, so the files never add up to more than the cap, not even for a moment.
    while (!failed_ && !kept_.empty() && kept_bytes() + fixed + limit * sizeof(Event) > max_bytes_) drop_oldest();
    if (failed_) return false;
  }
  TraceHeader h = header_;
  h.segment = next_segment_;
  h.checkpoint_size = static_cast<uint32_t>(checkpoint.size());
  h.first_event = written_;
  std::string head(reinterpret_cast<const char*>(&h), sizeof h);
  head += checkpoint;
  head.resize(fixed, '\0');
  const std::string name = trace_segment_name(next_segment_);
  auto file = std::make_unique<OwnedFile>();
  if (!file->create(*dir_, name, /*exclusive=*/true)) {
    fail("cannot create " + dir_->shown(name), errno);
    return false;
  }
  if (!file->append(head.data(), head.size())) {
    const int err = errno;
    file.reset();
    if (const int dirfd = dir_->fd(); dirfd >= 0) unlinkat(dirfd, name.c_str(), 0);  // no header, no segment
    fail("cannot write " + dir_->shown(name), err);
    return false;
  }
  file_ = std::move(file);  // the previous segment is closed
  kept_.push_back({next_segment_, fixed, 0, 0});
  ++next_segment_;
  segment_limit_ = limit;
  segment_events_ = 0;
  return true;
}

void TraceWriter::drop_oldest() {
  const Segment s = kept_.front();
  const std::string name = trace_segment_name(s.index);
  const int dirfd = dir_->fd();
  // Gone already (someone cleaned up): the space is free all the same.
  if ((dirfd < 0 || unlinkat(dirfd, name.c_str(), 0) != 0) && errno != ENOENT) {
    fail("cannot delete " + dir_->shown(name) + " to keep the trace within GPUMEMPROF_TRACE_MAX", errno);
    return;
  }
  kept_.pop_front();
  ++dropped_segments_;
  dropped_events_ += s.events;
}

void TraceWriter::start_segment(const std::string& checkpoint) {
  flush();  // what is buffered belongs to the segment it was appended to
  if (!failed_) create_segment(checkpoint);
}

void TraceWriter::append(const Event& e) {
  if (!failed_ && segment_events_ == 0) kept_.back().first_ns = e.timestamp_ns;
  ++segment_events_;
  buffer_.push_back(e);
}

bool TraceWriter::flush() {
  if (buffer_.empty()) return !failed_;
  if (!failed_ && !closed_) {
    const uint64_t bytes = buffer_.size() * sizeof(Event);
    if (file_->append(buffer_.data(), bytes)) {  // all of the batch or none
      written_ += buffer_.size();
      kept_.back().bytes += bytes;
      kept_.back().events += buffer_.size();
      buffer_.clear();
      return true;
    }
    fail("cannot write " + dir_->shown(trace_segment_name(kept_.back().index)), errno);
  }
  unwritten_ += buffer_.size();
  buffer_.clear();
  return false;
}

void TraceWriter::close() {
  flush();
  closed_ = true;
  if (file_) file_->close();
}

}  // namespace gmp
