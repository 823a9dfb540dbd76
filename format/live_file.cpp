#include "live_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gmp::live {
namespace {

bool pwrite_all(int fd, const void* data, size_t size, uint64_t offset) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool pread_all(int fd, void* data, size_t size, uint64_t offset) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;  // short: not a whole file
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// The header's part that every publish rewrites: from `state` to the device table.
constexpr size_t kNowBegin = offsetof(LiveFile, state);
constexpr size_t kNowEnd = offsetof(LiveFile, devices);
// Header, devices, top allocations and notices: everything before the history.
constexpr size_t kFiguresEnd = offsetof(LiveFile, history);

constexpr int kReadAttempts = 64;

}  // namespace

void set_text(char* field, size_t size, const std::string& text) {
  size_t n = text.size() < size ? text.size() : size - 1;
  // Cut before a UTF-8 continuation byte: never half a character.
  while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  std::memset(field, 0, size);
  std::memcpy(field, text.data(), n);
}

void init_live_file(LiveFile& f) {
  std::memset(&f, 0, sizeof f);
  std::memcpy(f.magic, kMagic, sizeof f.magic);
  f.version = kVersion;
  f.file_size = sizeof(LiveFile);
  f.rank = f.local_rank = f.world_size = -1;
  f.state = static_cast<uint32_t>(State::Running);
  for (LiveDevice& d : f.devices) d.ordinal = -1;
}

bool LiveFileWriter::write_seq(uint64_t seq) { return pwrite_all(fd_, &seq, sizeof seq, offsetof(LiveFile, seq)); }

bool LiveFileWriter::start(int fd, const LiveFile& initial) {
  fd_ = fd;
  return pwrite_all(fd_, &initial, sizeof initial, 0);
}

bool LiveFileWriter::publish(LiveFile& f, bool figures, uint64_t history_from) {
  // Each step is its own system call, and each completes before the next begins: a reader that
  // copied the whole file between two equal even values of `seq` copied no half-written bytes.
  if (!write_seq(++f.seq)) return false;
  const char* base = reinterpret_cast<const char*>(&f);
  bool ok = pwrite_all(fd_, base + kNowBegin, kNowEnd - kNowBegin, kNowBegin);
  if (ok && figures) ok = pwrite_all(fd_, base + kNowEnd, kFiguresEnd - kNowEnd, kNowEnd);
  if (ok && history_from != 0 && history_from <= f.history_latest) {
    // The seconds from history_from to the latest, at most the whole ring: one write, or two where
    // they wrap around its end.
    const uint64_t count = std::min<uint64_t>(f.history_latest - history_from + 1, kHistorySeconds);
    const uint64_t first = (f.history_latest - count + 1) % kHistorySeconds;
    const uint64_t before_end = std::min<uint64_t>(count, kHistorySeconds - first);
    const size_t at = offsetof(LiveFile, history) + first * sizeof(LiveSecond);
    ok = pwrite_all(fd_, base + at, before_end * sizeof(LiveSecond), at);
    if (ok && count > before_end) {
      const size_t start = offsetof(LiveFile, history);
      ok = pwrite_all(fd_, base + start, (count - before_end) * sizeof(LiveSecond), start);
    }
  }
  // Even after a failed write: the lock must not stay held (the bytes are whatever landed, and
  // the next publish rewrites them).
  const int err = errno;
  const bool unlocked = write_seq(++f.seq);
  errno = err;
  return ok && unlocked;
}

ReadResult read_live_file(int fd, LiveFile& out) {
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    uint64_t before = 0, after = 0;
    if (!pread_all(fd, &before, sizeof before, offsetof(LiveFile, seq))) {
      return errno == 0 ? ReadResult::NotLive : ReadResult::Failed;
    }
    if (!pread_all(fd, &out, sizeof out, 0)) return errno == 0 ? ReadResult::NotLive : ReadResult::Failed;
    if (std::memcmp(out.magic, kMagic, sizeof kMagic) != 0 || out.version != kVersion ||
        out.file_size != sizeof(LiveFile)) {
      return ReadResult::NotLive;
    }
    if (!pread_all(fd, &after, sizeof after, offsetof(LiveFile, seq))) return ReadResult::Failed;
    if ((before & 1) == 0 && before == after) return ReadResult::Ok;
    if (attempt >= 8) usleep(100);
  }
  return ReadResult::Torn;
}

}  // namespace gmp::live
