// format/live_file.h: the sequence lock between one writer and any readers, without a process.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "live_file.h"
#include "temp_dir.h"

namespace gmp::live {
namespace {

// Every figure the writer sets to one value `k` per publish: a snapshot is consistent iff all agree.
void set_all(LiveFile& f, uint64_t k) {
  f.events = k;
  f.heartbeat_realtime_ns = k;
  f.devices[0].allocated = k;
  f.devices[live::kDevices - 1].reserved = k;
  f.top[2 * kTopAllocations - 1].size = k;
  f.notices[kNotices - 1].size = k;
}
bool consistent(const LiveFile& f) {
  const uint64_t k = f.events;
  return f.heartbeat_realtime_ns == k && f.devices[0].allocated == k && f.devices[live::kDevices - 1].reserved == k &&
         f.top[2 * kTopAllocations - 1].size == k && f.notices[kNotices - 1].size == k;
}

// A live file in a temporary directory, with the writer's copy (`f`, empty) and the writer.
struct File {
  test::TempDir dir;
  std::string path = dir.path + "/live.bin";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  std::unique_ptr<LiveFile> f = [] {
    auto f = std::make_unique<LiveFile>();
    init_live_file(*f);
    return f;
  }();
  LiveFileWriter w;
  ~File() { ::close(fd); }
  bool start() { return w.start(fd, *f); }
};

TEST(LiveFileFormat, WrittenAndReadBack) {
  File file;
  auto& f = file.f;
  auto& w = file.w;
  f->pid = 42;
  set_text(f->program, "train.py");
  ASSERT_TRUE(file.start());
  set_all(*f, 7);
  f->history_latest = 1'700'000'123;
  f->history[f->history_latest % kHistorySeconds].second = f->history_latest;
  f->history[f->history_latest % kHistorySeconds].allocated_max[3] = 99;
  ASSERT_TRUE(w.publish(*f, true, f->history_latest));
  auto r = std::make_unique<LiveFile>();
  ASSERT_EQ(read_live_file(file.fd, *r), ReadResult::Ok);
  EXPECT_EQ(r->seq, 2u);
  EXPECT_TRUE(consistent(*r));
  EXPECT_EQ(r->events, 7u);
  EXPECT_EQ(r->pid, 42u);
  EXPECT_EQ(text_of(r->program), "train.py");
  EXPECT_EQ(r->devices[1].ordinal, -1);
  EXPECT_EQ(r->history[1'700'000'123 % kHistorySeconds].allocated_max[3], 99u);
  // A range of seconds across the ring's end: every slot of it, in one publish.
  const uint64_t end = 3 * kHistorySeconds + 2;  // slots 598, 599, 0, 1, 2
  for (uint64_t s = end - 4; s <= end; ++s) f->history[s % kHistorySeconds].second = s;
  f->history_latest = end;
  ASSERT_TRUE(w.publish(*f, false, end - 4));
  ASSERT_EQ(read_live_file(file.fd, *r), ReadResult::Ok);
  for (uint64_t s = end - 4; s <= end; ++s) EXPECT_EQ(r->history[s % kHistorySeconds].second, s) << s;
  EXPECT_EQ(r->history[3].second, 0u);  // outside the range: never written
  // Without `figures`, only the header's changing part is rewritten.
  set_all(*f, 8);
  ASSERT_TRUE(w.publish(*f, false, 0));
  ASSERT_EQ(read_live_file(file.fd, *r), ReadResult::Ok);
  EXPECT_EQ(r->events, 8u);
  EXPECT_EQ(r->devices[0].allocated, 7u);
}

TEST(LiveFileFormat, NotALiveFile) {
  File file;
  auto r = std::make_unique<LiveFile>();
  EXPECT_EQ(read_live_file(file.fd, *r), ReadResult::NotLive);  // empty
  std::string junk(sizeof(LiveFile), 'x');
  ASSERT_EQ(pwrite(file.fd, junk.data(), junk.size(), 0), static_cast<ssize_t>(junk.size()));
  EXPECT_EQ(read_live_file(file.fd, *r), ReadResult::NotLive);
  LiveFile& f = *file.f;
  f.version = kVersion + 1;
  ASSERT_EQ(pwrite(file.fd, &f, sizeof(LiveFile) / 2, 0), static_cast<ssize_t>(sizeof(LiveFile) / 2));
  EXPECT_EQ(read_live_file(file.fd, *r), ReadResult::NotLive);
  ASSERT_EQ(ftruncate(file.fd, 100), 0);  // truncated: short
  EXPECT_EQ(read_live_file(file.fd, *r), ReadResult::NotLive);
}

TEST(LiveFileFormat, AWriterStoppedMidPublishIsTorn) {
  File file;
  ASSERT_TRUE(file.start());
  const uint64_t odd = 5;  // what a writer killed between its writes leaves
  ASSERT_EQ(pwrite(file.fd, &odd, sizeof odd, offsetof(LiveFile, seq)), 8);
  auto r = std::make_unique<LiveFile>();
  EXPECT_EQ(read_live_file(file.fd, *r), ReadResult::Torn);
  EXPECT_EQ(r->seq, odd);  // the last copy, for a reader that shows a dead process as it was
}

// A reader racing a writer sees only whole snapshots. The writer pauses 0.2 ms between publishes
// (the collector's are 20 ms apart at least): long enough for a copy to complete now and then,
// short enough that most copies overlap a publish.
TEST(LiveFileFormat, NoTornSnapshotUnderAWriter) {
  File file;
  auto& f = file.f;
  auto& w = file.w;
  ASSERT_TRUE(file.start());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> published{0};
  std::thread writer([&] {
    for (uint64_t k = 1; !stop.load(std::memory_order_relaxed); ++k) {
      set_all(*f, k);
      if (!w.publish(*f, true, 0)) break;
      published.fetch_add(1);
      usleep(200);
    }
  });
  const int reader_fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  auto r = std::make_unique<LiveFile>();
  int ok = 0;
  uint64_t last = 0;
  // At least 500 reads and, on a loaded machine where the writer thread starts late, until it has
  // published 50 times (bounded: a writer that never runs fails below, not by hanging).
  for (int i = 0; (i < 500 || published.load() < 50) && i < 2'000'000; ++i) {
    const ReadResult res = read_live_file(reader_fd, *r);
    if (res == ReadResult::Ok) {
      ++ok;
      ASSERT_TRUE(consistent(*r)) << "a mixed snapshot at seq " << r->seq;
      ASSERT_GE(r->events, last);  // never backwards
      last = r->events;
    } else {
      ASSERT_EQ(res, ReadResult::Torn);  // a busy writer may outrun a few attempts
    }
  }
  stop = true;
  writer.join();
  ::close(reader_fd);
  EXPECT_GT(ok, 0);
  EXPECT_GT(last, 0u);
}

// A reader killed mid-read holds nothing the writer needs: it carries on, and the next reader
// reads a whole snapshot.
TEST(LiveFileFormat, AReaderKilledMidReadChangesNothing) {
  File file;
  auto& f = file.f;
  auto& w = file.w;
  ASSERT_TRUE(file.start());
  const pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
    static LiveFile copy;
    for (;;) read_live_file(fd, copy);
  }
  for (uint64_t k = 1; k <= 2000; ++k) {
    set_all(*f, k);
    ASSERT_TRUE(w.publish(*f, true, 0));
    if (k == 1000) {
      ASSERT_EQ(kill(reader, SIGKILL), 0);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  EXPECT_TRUE(WIFSIGNALED(status));
  auto r = std::make_unique<LiveFile>();
  ASSERT_EQ(read_live_file(file.fd, *r), ReadResult::Ok);
  EXPECT_EQ(r->events, 2000u);
  EXPECT_TRUE(consistent(*r));
}

TEST(LiveFileFormat, TextIsCutWholeCharacters) {
  char field[6];
  set_text(field, "ab\xc3\xa9\xc3\xa9");  // "abéé": 6 bytes, one too many with the NUL
  EXPECT_EQ(text_of(field), "ab\xc3\xa9");
  set_text(field, "abc");
  EXPECT_EQ(text_of(field), "abc");
}

}  // namespace
}  // namespace gmp::live
