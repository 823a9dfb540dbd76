// live.bin and the registry (docs/live.md): what a profiled process publishes for gpumemprof top,
// read the way any reader does (format/live_file.h), while the program stops between its steps.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "harness.h"
#include "live_file.h"
#include "live_registry.h"

namespace gmp::test {
namespace {

using live::LiveFile;

constexpr uint64_t MB = 1'000'000;

// The file's latest consistent snapshot; nullptr when there is none (yet).
std::unique_ptr<LiveFile> read_live(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  auto f = std::make_unique<LiveFile>();
  const live::ReadResult r = live::read_live_file(fd, *f);
  ::close(fd);
  return r == live::ReadResult::Ok ? std::move(f) : nullptr;
}

// Reads until `done` holds of a snapshot (the collector publishes within milliseconds of a step),
// at most 30 s; the last snapshot read, or nullptr.
std::unique_ptr<LiveFile> read_until(const std::string& path, const std::function<bool(const LiveFile&)>& done) {
  std::unique_ptr<LiveFile> last;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto f = read_live(path)) {
      const bool ok = done(*f);
      last = std::move(f);
      if (ok) return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "no snapshot of " << path << " met the condition within 30 s";
  return last;
}

void touch(const std::string& path) { std::ofstream(path) << ""; }

// The run directory of the one process under the sandbox, once it exists.
std::string wait_run_dir(const Sandbox& box) {
  for (int i = 0; i < 3000; ++i) {
    const auto dirs = box.run_dirs();
    if (!dirs.empty() && exists(dirs.front() + "/live.bin")) return dirs.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "no live.bin under " << box.dir();
  return {};
}

std::string link_target(const std::string& path) {
  char buf[4096];
  const ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
}

TEST(LiveFile, FollowsEachStepExactlyAndEndsExited) {
  Sandbox box;
  const std::string a = box.dir() + "/a", b = box.dir() + "/b";
  int out = -1;
  const pid_t pid = box.spawn({Paths::bin("prog_ops"), "alloc:1000000", "alloc:2000000", "wait:" + a, "free:0",
                               "alloc:500000", "wait:" + b},
                              {}, &out);
  const std::string run = wait_run_dir(box);
  const std::string file = run + "/live.bin";
  auto f = read_until(file, [](const LiveFile& f) { return f.devices_used == 1 && f.devices[0].allocated == 3 * MB; });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->pid, static_cast<uint64_t>(pid));
  EXPECT_EQ(f->start_ticks, live::process_start_ticks(static_cast<uint64_t>(pid)).value());
  EXPECT_EQ(f->state, static_cast<uint32_t>(live::State::Running));
  EXPECT_EQ(live::text_of(f->program), "prog_ops");
  EXPECT_EQ(live::text_of(f->run_dir), run);
  EXPECT_EQ(f->devices[0].ordinal, 0);
  EXPECT_EQ(f->devices[0].total_bytes, 16ull << 30);
  EXPECT_EQ(f->devices[0].allocated_peak, 3 * MB);
  EXPECT_EQ(f->devices[0].reserved, 3 * MB);
  EXPECT_EQ(f->devices[0].alloc_count, 2u);
  EXPECT_EQ(f->devices[0].flags & live::LiveDevice::kFramework, 0u);
  EXPECT_EQ(f->devices[1].ordinal, -1);
  // The largest first, both with the call stack they were made from.
  f = read_until(file, [](const LiveFile& f) { return f.top[1].size == 1 * MB; });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->top[0].size, 2 * MB);
  EXPECT_EQ(f->top[0].level, live::LiveTop::kDriver);
  EXPECT_NE(f->top[0].stack_id, 0u);
  EXPECT_EQ(f->top[2].size, 0u);
  EXPECT_EQ(f->devices[0].live_allocations, 2u);  // counted with the largest
  EXPECT_NE(f->history_latest, 0u);
  EXPECT_EQ(f->history[f->history_latest % live::kHistorySeconds].allocated_max[0], 3 * MB);
  // Registered while it runs: PID.START_TICKS -> the run directory; the file is ours alone.
  const std::string entry =
      box.dir() + "/registry/" + live::registry_entry_name(static_cast<uint64_t>(pid), f->start_ticks);
  EXPECT_EQ(link_target(entry), run);
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(static_cast<size_t>(st.st_size), sizeof(LiveFile));
  ASSERT_EQ(stat((box.dir() + "/registry").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  touch(a);
  f = read_until(file, [](const LiveFile& f) { return f.devices[0].allocated == 2'500'000 && f.top[1].size == 500'000; });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->devices[0].allocated_peak, 3 * MB);
  EXPECT_EQ(f->devices[0].live_allocations, 2u);
  EXPECT_EQ(f->top[0].size, 2 * MB);
  EXPECT_EQ(f->top[1].size, 500'000u);
  EXPECT_EQ(f->devices[0].free_count, 1u);
  touch(b);
  const RunResult r = wait_for(pid, out, -1, 30);
  close(out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  f = read_live(file);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->state, static_cast<uint32_t>(live::State::Exited));
  EXPECT_EQ(f->devices[0].allocated, 2'500'000u);
  // The final figures: the summary's.
  const nlohmann::json s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["events"]["recorded"], f->events);
  EXPECT_FALSE(exists(entry)) << "the registry entry outlived its process";
}

// A peak between two publishes is never in the figures' current values, but its second's history
// slot holds it.
TEST(LiveFile, HistoryKeepsAPeakShorterThanAPublish) {
  Sandbox box;
  const std::string go = box.dir() + "/go";
  int out = -1;
  const pid_t pid =
      box.spawn({Paths::bin("prog_ops"), "alloc:1000", "alloc:5000000", "free_last", "wait:" + go}, {}, &out);
  const std::string file = wait_run_dir(box) + "/live.bin";
  auto f = read_until(file, [](const LiveFile& f) { return f.devices[0].free_count == 1; });
  ASSERT_TRUE(f);
  touch(go);
  wait_for(pid, out, -1, 30);
  close(out);
  f = read_live(file);
  ASSERT_TRUE(f);
  uint64_t highest = 0, seconds = 0;
  for (const live::LiveSecond& s : f->history) {
    if (s.second == 0) continue;
    ++seconds;
    EXPECT_LE(s.second, f->history_latest);
    highest = std::max(highest, s.allocated_max[0]);
  }
  EXPECT_GE(seconds, 1u);
  EXPECT_EQ(highest, 5'001'000u);
  EXPECT_EQ(f->history[f->history_latest % live::kHistorySeconds].allocated_max[0] >= 1000, true);
}

TEST(LiveFile, OffWithLiveZero) {
  Sandbox box;
  const RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1000"}, {{"GPUMEMPROF_LIVE", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(exists(box.only_run_dir() + "/live.bin"));
  EXPECT_FALSE(exists(box.dir() + "/registry"));
}

TEST(LiveFile, NothingWithoutCuda) {
  Sandbox box;
  const RunResult r = box.run({"/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(box.run_dirs().empty());
  EXPECT_FALSE(exists(box.dir() + "/registry"));
}

TEST(LiveFile, KilledProcessLeavesRunningStateAndItsEntry) {
  Sandbox box;
  const std::string go = box.dir() + "/go";
  int out = -1;
  const pid_t pid = box.spawn({Paths::bin("prog_ops"), "alloc:4000000", "wait:" + go}, {}, &out);
  const std::string file = wait_run_dir(box) + "/live.bin";
  auto f = read_until(file, [](const LiveFile& f) { return f.devices[0].allocated == 4 * MB; });
  ASSERT_TRUE(f);
  const uint64_t ticks = f->start_ticks;
  kill(pid, SIGKILL);
  const RunResult r = wait_for(pid, out, -1, 30);
  close(out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  f = read_live(file);
  ASSERT_TRUE(f);
  // What tells a reader it is dead: the state still says running, but the process is gone.
  EXPECT_EQ(f->state, static_cast<uint32_t>(live::State::Running));
  EXPECT_FALSE(live::process_start_ticks(static_cast<uint64_t>(pid)).has_value());
  EXPECT_TRUE(exists(box.dir() + "/registry/" + live::registry_entry_name(static_cast<uint64_t>(pid), ticks)));
}

TEST(LiveFile, FatalSignalIsSaid) {
  Sandbox box;
  const RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1000000", "abort"});
  EXPECT_EQ(r.term_signal, SIGABRT);
  const auto f = read_live(box.only_run_dir() + "/live.bin");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->state, static_cast<uint32_t>(live::State::Signalled));
  EXPECT_EQ(f->devices[0].allocated, 1 * MB);
  // Kept, so that top shows the process as killed.
  EXPECT_TRUE(exists(box.dir() + "/registry/" + live::registry_entry_name(f->pid, f->start_ticks)));
}

// prog_lifecycle MODE's two run directories' files (exec: the two images; fork: parent and child).
std::pair<std::unique_ptr<LiveFile>, std::unique_ptr<LiveFile>> two_files(const Sandbox& box, const char* mode) {
  const RunResult r = box.run({Paths::bin("prog_lifecycle"), mode});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto dirs = box.run_dirs();
  EXPECT_EQ(dirs.size(), 2u);
  if (dirs.size() != 2) return {};
  return {read_live(dirs[0] + "/live.bin"), read_live(dirs[1] + "/live.bin")};
}

TEST(LiveFile, ExecEndsTheOldFileAndTheNewImageHasItsOwn) {
  Sandbox box;
  const auto [before, after] = two_files(box, "exec");
  ASSERT_TRUE(before && after);
  EXPECT_EQ(before->state, static_cast<uint32_t>(live::State::Exec));
  EXPECT_EQ(before->devices[0].allocated, 1ull << 20);
  EXPECT_EQ(after->state, static_cast<uint32_t>(live::State::Exited));
  EXPECT_EQ(after->devices[0].allocated_peak, 3ull << 20);
  EXPECT_EQ(before->pid, after->pid);  // one process, two images: its entry came and went twice
  EXPECT_FALSE(exists(box.dir() + "/registry/" + live::registry_entry_name(after->pid, after->start_ticks)));
}

TEST(LiveFile, AForkedChildPublishesItsOwn) {
  Sandbox box;
  const auto [a, b] = two_files(box, "fork");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->pid, b->pid);
  EXPECT_EQ(a->state, static_cast<uint32_t>(live::State::Exited));
  EXPECT_EQ(b->state, static_cast<uint32_t>(live::State::Exited));
}

TEST(LiveFile, OomsAreNoticed) {
  Sandbox box;
  const RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1000", "expect_fail:1T"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = read_live(box.only_run_dir() + "/live.bin");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->oom_failures, 1u);
  EXPECT_EQ(f->devices[0].ooms, 1u);
  ASSERT_EQ(f->notices_total, 1u);
  EXPECT_EQ(f->notices[0].type, live::LiveNotice::kOom);
  EXPECT_EQ(f->notices[0].size, 1ull << 40);
  EXPECT_EQ(f->notices[0].device, 0);
  EXPECT_EQ(f->notices[0].allocated, 1000u);
}

TEST(LiveFile, RegistryOthersMayEnterIsRefused) {
  Sandbox box;
  const std::string registry = box.dir() + "/registry";
  ASSERT_EQ(mkdir(registry.c_str(), 0755), 0);
  ASSERT_EQ(chmod(registry.c_str(), 0755), 0);
  const RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(registry + " is refused: mode 0755: others may read or enter it (0700 is needed); "
                                  "gpumemprof top finds this process only with --root"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(exists(box.only_run_dir() + "/live.bin"));
  DIR* d = opendir(registry.c_str());
  ASSERT_NE(d, nullptr);
  int entries = 0;
  while (dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 0);
}

// A symlink planted where the registry goes is never followed; a registry that cannot be made is
// said when it was asked for (GPUMEMPROF_LIVE_REGISTRY) and the program runs on either way.
TEST(LiveFile, RegistryPlantedOrMissingIsSaidAndTheProgramRunsOn) {
  Sandbox box;
  const std::string elsewhere = box.dir() + "/elsewhere", registry = box.dir() + "/registry";
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0700), 0);
  ASSERT_EQ(symlink(elsewhere.c_str(), registry.c_str()), 0);
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpumemprof: cannot open " + registry + ": not a directory; gpumemprof top finds this process "
                   "only with --root\n");
  DIR* d = opendir(elsewhere.c_str());
  ASSERT_NE(d, nullptr);
  int entries = 0;
  while (dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 0);

  const std::string missing = box.dir() + "/no/such/dir";
  r = box.run({Paths::bin("prog_ops"), "alloc:1000"}, {{"GPUMEMPROF_LIVE_REGISTRY", missing}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpumemprof: cannot create " + missing + ": No such file or directory; gpumemprof top finds this "
                   "process only with --root\n");
}

TEST(LiveFile, AnotherUserSeesNothing) {
  SKIP_UNLESS_ROOT();
  Sandbox box;
  ASSERT_EQ(chmod(box.dir().c_str(), 0755), 0);  // the sandbox itself is no obstacle
  const std::string go = box.dir() + "/go";
  int out = -1;
  const pid_t pid = box.spawn({Paths::bin("prog_ops"), "alloc:1000", "wait:" + go}, {}, &out);
  const std::string run = wait_run_dir(box);
  ASSERT_TRUE(read_until(run + "/live.bin", [](const LiveFile& f) { return f.devices_used == 1; }));
  ASSERT_EQ(chmod(run.c_str(), 0755), 0);  // not even when the run directory is opened up
  const std::string file = run + "/live.bin", registry = box.dir() + "/registry";
  const int result = as_other_user([&] {
    if (::open(file.c_str(), O_RDONLY) >= 0 || errno != EACCES) return 1;
    if (opendir(registry.c_str()) != nullptr || errno != EACCES) return 2;
    return 0;
  });
  touch(go);
  wait_for(pid, out, -1, 30);
  close(out);
  EXPECT_EQ(result, 0);
}

}  // namespace
}  // namespace gmp::test
