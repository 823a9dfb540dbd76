// The reader of live files (tools/reader/live_reader.h): liveness, discovery through the registry
// and under a ROOT, the cache, the registry's pruning and its refusal, and torn reads. The files are
// written by the collector's own writer (live_files.h); no timing decides any assertion.
#include "live_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "live_files.h"
#include "live_registry.h"
#include "temp_dir.h"

namespace gmp::reader {
namespace {

using test::LiveRunFile;
using test::realtime_ns;
using test::TempDir;

constexpr uint64_t kSecond = 1'000'000'000;
// No pid reaches this (pid_max is at most 2^22): a process that is certainly gone.
constexpr uint64_t kNoSuchPid = 999'999'999;

std::string make_registry(const std::string& parent, mode_t mode = 0700) {
  const std::string dir = parent + "/registry";
  mkdir(dir.c_str(), mode);
  chmod(dir.c_str(), mode);
  return dir;
}

void enter(const std::string& registry, const LiveRunFile& run, uint64_t pid, uint64_t ticks) {
  ASSERT_EQ(symlink(run.dir().c_str(), (registry + "/" + live::registry_entry_name(pid, ticks)).c_str()), 0);
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

TEST(LiveReader, LivenessFromStateProcAndHeartbeat) {
  TempDir t;
  LiveRunFile run(t.path + "/run");
  ASSERT_TRUE(run.ok());
  const ThisMachine here = this_machine();
  live::LiveFile& f = run.f();
  const uint64_t now = realtime_ns();
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Running);  // this very process
  f.start_ticks += 1;  // the pid is another process now
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Dead);
  f.start_ticks -= 1;
  f.pid = kNoSuchPid;
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Dead);
  // /proc says nothing of a process of another machine: its heartbeat does.
  live::set_text(f.host, "elsewhere");
  f.heartbeat_realtime_ns = now - live::kStaleNs + kSecond;
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Running);
  f.heartbeat_realtime_ns = now - live::kStaleNs - kSecond;
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Dead);
  // ... nor of another boot or another PID namespace of this machine.
  live::set_text(f.host, here.host);
  live::set_text(f.boot_id, "another-boot");
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Dead);
  f.heartbeat_realtime_ns = now;
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Running);
  live::set_text(f.boot_id, here.boot_id);
  f.pid_namespace = here.pid_namespace + 1;
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Running);
  // How it ended, as the file says, whatever /proc does.
  f.state = static_cast<uint32_t>(live::State::Exited);
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Exited);
  f.state = static_cast<uint32_t>(live::State::Signalled);
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Signalled);
  f.state = static_cast<uint32_t>(live::State::Exec);
  EXPECT_EQ(liveness_of(f, here, now), Liveness::Exec);
  EXPECT_STREQ(liveness_name(Liveness::Signalled), "killed");
  EXPECT_STREQ(liveness_name(Liveness::Dead), "dead");
}

TEST(LiveReader, FindsTheRegistrysProcesses) {
  TempDir t;
  const std::string registry = make_registry(t.path);
  LiveRunFile a(t.path + "/a"), b(t.path + "/b");
  a.f().rank = 1;
  a.device(0, 3).allocated = 1234;
  ASSERT_TRUE(a.rewrite());
  b.f().pid = kNoSuchPid;  // killed: dead, shown for the keep time
  ASSERT_TRUE(b.rewrite());
  enter(registry, a, a.f().pid, a.f().start_ticks);
  enter(registry, b, kNoSuchPid, 5);
  // What is not an entry of ours is left alone.
  std::ofstream(registry + "/notes.txt") << "x";
  ASSERT_EQ(symlink("relative/path", (registry + "/77.88").c_str()), 0);
  LiveReader reader({std::nullopt, registry, 60 * kSecond, false});
  const LiveScan scan = reader.refresh(realtime_ns());
  EXPECT_EQ(scan.error, "");
  EXPECT_TRUE(scan.unreadable.empty());
  ASSERT_EQ(scan.processes.size(), 2u);
  EXPECT_EQ(scan.processes[0].run_dir, a.dir());  // ranked first
  EXPECT_EQ(scan.processes[0].liveness, Liveness::Running);
  EXPECT_EQ(scan.processes[0].file->devices[0].ordinal, 3);
  EXPECT_EQ(scan.processes[0].file->devices[0].allocated, 1234u);
  EXPECT_EQ(scan.processes[1].run_dir, b.dir());
  EXPECT_EQ(scan.processes[1].liveness, Liveness::Dead);
  EXPECT_FALSE(scan.processes[1].torn);
  EXPECT_TRUE(exists(registry + "/notes.txt"));
  EXPECT_TRUE(exists(registry + "/77.88"));
}

TEST(LiveReader, NoRegistryIsNoProcessNotAnError) {
  TempDir t;
  LiveReader reader({std::nullopt, t.path + "/none", 60 * kSecond, false});
  const LiveScan scan = reader.refresh(realtime_ns());
  EXPECT_EQ(scan.error, "");
  EXPECT_TRUE(scan.processes.empty());
}

TEST(LiveReader, RefusesARegistryOthersMayEnter) {
  TempDir t;
  const std::string registry = make_registry(t.path, 0755);
  LiveRunFile a(t.path + "/a");
  enter(registry, a, a.f().pid, a.f().start_ticks);
  LiveReader reader({std::nullopt, registry, 60 * kSecond, false});
  const LiveScan scan = reader.refresh(realtime_ns());
  EXPECT_EQ(scan.error, "not reading the registry " + registry +
                            ": mode 0755: others may read or enter it (0700 is needed); another user could plant "
                            "entries there");
  EXPECT_TRUE(scan.processes.empty());
  EXPECT_EQ(reader.files_read(), 0u);
  // A symlink to a private directory is not the directory.
  const std::string link = t.path + "/link";
  mkdir((t.path + "/private").c_str(), 0700);
  ASSERT_EQ(symlink(make_registry(t.path + "/private", 0700).c_str(), link.c_str()), 0);
  LiveReader via_link({std::nullopt, link, 60 * kSecond, false});
  EXPECT_NE(via_link.refresh(realtime_ns()).error.find("cannot read the registry " + link), std::string::npos);
}

TEST(LiveReader, EndedProcessesAreReadOnceAndRunningOnesEachTime) {
  TempDir t;
  const std::string registry = make_registry(t.path);
  LiveRunFile running(t.path + "/running"), exited(t.path + "/exited"), dead(t.path + "/dead");
  exited.f().state = static_cast<uint32_t>(live::State::Exited);
  ASSERT_TRUE(exited.rewrite());
  dead.f().start_ticks += 1;  // this pid, another start: dead by /proc
  ASSERT_TRUE(dead.rewrite());
  enter(registry, running, running.f().pid, running.f().start_ticks);
  enter(registry, exited, 4242, 1);
  enter(registry, dead, dead.f().pid, dead.f().start_ticks);
  LiveReader reader({std::nullopt, registry, 60 * kSecond, false});
  const uint64_t now = realtime_ns();
  ASSERT_EQ(reader.refresh(now).processes.size(), 3u);
  EXPECT_EQ(reader.files_read(), 3u);
  for (int i = 1; i <= 5; ++i) {
    const LiveScan scan = reader.refresh(now + static_cast<uint64_t>(i) * kSecond);
    ASSERT_EQ(scan.processes.size(), 3u);
    EXPECT_EQ(reader.files_read(), 3u + static_cast<uint64_t>(i));  // only the running one again
  }
  // A new file at the same path (another inode) is read again.
  ASSERT_EQ(unlink((exited.dir() + "/live.bin").c_str()), 0);
  LiveRunFile again(exited.dir());
  again.f().state = static_cast<uint32_t>(live::State::Exited);
  again.device(0, 0).allocated = 77;
  ASSERT_TRUE(again.rewrite());
  const LiveScan scan = reader.refresh(now + 6 * kSecond);
  EXPECT_EQ(reader.files_read(), 3u + 5u + 2u);
  ASSERT_EQ(scan.processes.size(), 3u);
  bool found = false;
  for (const LiveProcess& p : scan.processes) {
    if (p.run_dir == exited.dir()) found = p.file->devices[0].allocated == 77;
  }
  EXPECT_TRUE(found);
}

TEST(LiveReader, EntriesOfProcessesOverForTheKeepTimeAreRemoved) {
  TempDir t;
  const std::string registry = make_registry(t.path);
  LiveRunFile recent(t.path + "/recent"), old(t.path + "/old"), old_exit(t.path + "/old_exit"),
      running(t.path + "/running");
  const uint64_t now = realtime_ns();
  recent.f().pid = kNoSuchPid;
  recent.f().heartbeat_realtime_ns = now - 30 * kSecond;
  old.f().pid = kNoSuchPid;
  old.f().heartbeat_realtime_ns = now - 61 * kSecond;
  old_exit.f().state = static_cast<uint32_t>(live::State::Exited);
  old_exit.f().heartbeat_realtime_ns = now - 61 * kSecond;
  running.f().heartbeat_realtime_ns = now - 3600 * kSecond;  // alive by /proc whatever its heartbeat
  for (LiveRunFile* r : {&recent, &old, &old_exit, &running}) ASSERT_TRUE(r->rewrite());
  enter(registry, recent, kNoSuchPid, 1);
  enter(registry, old, kNoSuchPid, 2);
  enter(registry, old_exit, kNoSuchPid, 3);
  enter(registry, running, running.f().pid, running.f().start_ticks);
  LiveReader reader({std::nullopt, registry, 60 * kSecond, false});
  LiveScan scan = reader.refresh(now);
  ASSERT_EQ(scan.processes.size(), 2u);
  EXPECT_EQ(scan.processes[0].run_dir, running.dir());
  EXPECT_EQ(scan.processes[1].run_dir, recent.dir());
  EXPECT_EQ(scan.processes[1].liveness, Liveness::Dead);
  EXPECT_EQ(reader.entries_removed(), 2u);
  EXPECT_TRUE(exists(registry + "/" + live::registry_entry_name(kNoSuchPid, 1)));
  EXPECT_FALSE(exists(registry + "/" + live::registry_entry_name(kNoSuchPid, 2)));
  EXPECT_FALSE(exists(registry + "/" + live::registry_entry_name(kNoSuchPid, 3)));
  EXPECT_TRUE(exists(old.dir() + "/live.bin"));  // the run directory is the user's: untouched
  // Past its keep time the recent one goes too.
  scan = reader.refresh(now + 31 * kSecond);
  ASSERT_EQ(scan.processes.size(), 1u);
  EXPECT_FALSE(exists(registry + "/" + live::registry_entry_name(kNoSuchPid, 1)));
  // --all shows every process found, however old (and removes their entries all the same).
  mkdir((t.path + "/second").c_str(), 0700);
  const std::string registry2 = make_registry(t.path + "/second");
  enter(registry2, old, kNoSuchPid, 2);
  LiveReader all({std::nullopt, registry2, 60 * kSecond, true});
  scan = all.refresh(now);
  ASSERT_EQ(scan.processes.size(), 1u);
  EXPECT_EQ(scan.processes[0].liveness, Liveness::Dead);
}

TEST(LiveReader, AProcessWhoseEntryWentIsShownUntilItsKeepTimeEnds) {
  TempDir t;
  const std::string registry = make_registry(t.path);
  LiveRunFile run(t.path + "/run");
  enter(registry, run, run.f().pid, run.f().start_ticks);
  LiveReader reader({std::nullopt, registry, 60 * kSecond, false});
  const uint64_t now = realtime_ns();
  ASSERT_EQ(reader.refresh(now).processes.size(), 1u);
  // It exits: the collector writes its final state and removes its own entry.
  run.f().state = static_cast<uint32_t>(live::State::Exited);
  run.f().heartbeat_realtime_ns = now;
  ASSERT_TRUE(run.publish());
  ASSERT_EQ(unlink((registry + "/" + live::registry_entry_name(run.f().pid, run.f().start_ticks)).c_str()), 0);
  LiveScan scan = reader.refresh(now + kSecond);
  ASSERT_EQ(scan.processes.size(), 1u);
  EXPECT_EQ(scan.processes[0].liveness, Liveness::Exited);
  EXPECT_EQ(reader.refresh(now + 61 * kSecond).processes.size(), 0u);
}

void run_dir_with_manifest(const std::string& path) {
  mkdir(path.c_str(), 0700);
  std::ofstream(path + "/manifest.json") << "{}";
}

TEST(LiveReader, FindsTheRunDirectoriesUnderARoot) {
  TempDir t;
  mkdir((t.path + "/node1").c_str(), 0700);
  run_dir_with_manifest(t.path + "/node1/rank1.train.py.20");
  run_dir_with_manifest(t.path + "/rank0.train.py.10");
  run_dir_with_manifest(t.path + "/old.5");  // an older version's run: no live.bin, skipped
  LiveRunFile r1(t.path + "/node1/rank1.train.py.20"), r0(t.path + "/rank0.train.py.10");
  r1.f().rank = 1;
  r0.f().rank = 0;
  ASSERT_TRUE(r1.rewrite());
  ASSERT_TRUE(r0.rewrite());
  LiveReader reader({t.path + "/", "", 60 * kSecond, false});
  LiveScan scan = reader.refresh(realtime_ns());
  EXPECT_EQ(scan.error, "");
  ASSERT_EQ(scan.processes.size(), 2u);
  EXPECT_EQ(scan.processes[0].run_dir, r0.dir());
  EXPECT_EQ(scan.processes[1].run_dir, r1.dir());
  // A run directory given itself.
  LiveReader one({r1.dir(), "", 60 * kSecond, false});
  scan = one.refresh(realtime_ns());
  ASSERT_EQ(scan.processes.size(), 1u);
  EXPECT_EQ(scan.processes[0].run_dir, r1.dir());
  LiveReader none({t.path + "/missing", "", 60 * kSecond, false});
  EXPECT_EQ(none.refresh(realtime_ns()).error, t.path + "/missing is not a directory");
}

TEST(LiveReader, ACorruptOrForeignLiveFileIsUnreadableNotACrash) {
  TempDir t;
  run_dir_with_manifest(t.path + "/garbage");
  std::ofstream(t.path + "/garbage/live.bin") << std::string(100000, 'x');
  run_dir_with_manifest(t.path + "/short");
  {
    LiveRunFile whole(t.path + "/short");
  }
  ASSERT_EQ(truncate((t.path + "/short/live.bin").c_str(), 1000), 0);
  run_dir_with_manifest(t.path + "/link");
  ASSERT_EQ(symlink((t.path + "/short/live.bin").c_str(), (t.path + "/link/live.bin").c_str()), 0);
  run_dir_with_manifest(t.path + "/fifo");
  ASSERT_EQ(mkfifo((t.path + "/fifo/live.bin").c_str(), 0600), 0);
  LiveReader reader({t.path, "", 60 * kSecond, false});
  const LiveScan scan = reader.refresh(realtime_ns());
  EXPECT_TRUE(scan.processes.empty());
  ASSERT_EQ(scan.unreadable.size(), 4u);
  EXPECT_EQ(scan.unreadable[0], t.path + "/fifo/live.bin: not a regular file");
  EXPECT_EQ(scan.unreadable[1], t.path + "/garbage/live.bin: not a live file of this version (bad magic, version or size)");
  EXPECT_EQ(scan.unreadable[2], t.path + "/link/live.bin: " + std::strerror(ELOOP));
  EXPECT_EQ(scan.unreadable[3], t.path + "/short/live.bin: not a live file of this version (bad magic, version or size)");
}

// The writer killed mid-publish leaves `seq` odd for ever: its last figures, marked dead.
TEST(LiveReader, ATornFileOfADeadProcessIsShownDead) {
  TempDir t;
  LiveRunFile run(t.path + "/run");
  run.f().pid = kNoSuchPid;
  run.device(0, 0).allocated = 4096;
  run.f().seq = 7;
  ASSERT_TRUE(run.rewrite());
  LiveReader reader({run.dir(), "", 60 * kSecond, false});
  const LiveScan scan = reader.refresh(realtime_ns());
  ASSERT_EQ(scan.processes.size(), 1u);
  EXPECT_TRUE(scan.processes[0].torn);
  EXPECT_EQ(scan.processes[0].liveness, Liveness::Dead);
  EXPECT_EQ(scan.processes[0].file->devices[0].allocated, 4096u);
  // The same, still alive (a writer preempted mid-publish): not shown until it is consistent.
  LiveRunFile alive(t.path + "/alive");
  alive.f().seq = 7;
  ASSERT_TRUE(alive.rewrite());
  LiveReader reader2({alive.dir(), "", 60 * kSecond, false});
  EXPECT_TRUE(reader2.refresh(realtime_ns()).processes.empty());
  alive.f().seq = 8;
  ASSERT_TRUE(alive.rewrite());
  EXPECT_EQ(reader2.refresh(realtime_ns()).processes.size(), 1u);
}

// A writer publishing as fast as it can, readers copying meanwhile: every snapshot taken is one
// publish's, never a mix of two (each figure is derived from one counter).
TEST(LiveReader, EverySnapshotIsOnePublishsWhileTheWriterRuns) {
  TempDir t;
  LiveRunFile run(t.path + "/run");
  ASSERT_TRUE(run.ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    live::LiveFile& f = run.f();
    for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
      live::LiveDevice& d = f.devices[0];
      d.ordinal = 0;
      d.allocated = i;
      d.reserved = 2 * i;
      d.allocated_peak = 3 * i;
      f.published = i;
      f.top[0].size = 5 * i;
      f.notices[0].size = 7 * i;
      f.history[i % live::kHistorySeconds].second = i;
      f.history[i % live::kHistorySeconds].allocated_max[0] = 11 * i;
      f.history_latest = i;
      if (!run.publish(i)) break;
    }
  });
  const int fd = ::open((run.dir() + "/live.bin").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto copy = std::make_unique<live::LiveFile>();
  int consistent = 0, torn = 0, mixed = 0;
  uint64_t last = 0;
  for (int n = 0; n < 300; ++n) {
    const live::ReadResult r = live::read_live_file(fd, *copy);
    if (r == live::ReadResult::Torn) {
      ++torn;
      continue;
    }
    ASSERT_EQ(r, live::ReadResult::Ok);
    ++consistent;
    const uint64_t i = copy->published;
    const live::LiveSecond& s = copy->history[copy->history_latest % live::kHistorySeconds];
    const bool same = copy->devices[0].allocated == i && copy->devices[0].reserved == 2 * i &&
                      copy->devices[0].allocated_peak == 3 * i && copy->top[0].size == 5 * i &&
                      copy->notices[0].size == 7 * i && copy->history_latest == i &&
                      (i == 0 || (s.second == i && s.allocated_max[0] == 11 * i));
    if (!same) ++mixed;
    EXPECT_GE(i, last);  // never older than a snapshot taken before
    last = i;
  }
  stop = true;
  writer.join();
  EXPECT_EQ(mixed, 0) << consistent << " consistent, " << torn << " torn";
  // Once the writer stopped between publishes, a read is consistent and has its last figures.
  ASSERT_EQ(live::read_live_file(fd, *copy), live::ReadResult::Ok);
  EXPECT_EQ(copy->published, run.f().published);
  EXPECT_EQ(copy->devices[0].reserved, 2 * run.f().published);
  ::close(fd);
}

}  // namespace
}  // namespace gmp::reader
