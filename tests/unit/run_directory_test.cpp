#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "log.h"
#include "oom_bundle.h"
#include "run_directory.h"
#include "temp_dir.h"

namespace gmp {
namespace {

ProcessInfo info() {
  ProcessInfo p;
  p.pid = 1234;
  p.exe_name = "train";
  p.host = "node7";
  p.rank = "3";
  p.start_realtime_ns = 1'700'000'000ull * 1'000'000'000ull;  // 2023-11-14T22:13:20Z
  return p;
}

TEST(RunDirectory, ExpandsEveryPlaceholder) {
  EXPECT_EQ(expand_output_template("gpumemprof.%e.%p", info()), "gpumemprof.train.1234");
  EXPECT_EQ(expand_output_template("/r/%h-%r-%t-100%%-%x", info()), "/r/node7-3-20231114T221320Z-100%-%x");
  EXPECT_EQ(expand_output_template("trailing%", info()), "trailing%");
}

// A Python interpreter's directory is named by what it runs (issue 15, defect 10): the script's
// file name past the interpreter's options, or the module given with -m; -c runs keep its name.
TEST(RunDirectory, PythonRunsAreNamedByTheirScriptOrModule) {
  auto named = [](const std::string& exe, std::vector<std::string> argv) {
    ProcessInfo p = info();
    p.exe_name = exe;
    p.argv = std::move(argv);
    return expand_output_template("%e.%p", p);
  };
  EXPECT_EQ(named("python3.12", {"python3", "-u", "/work/train.py", "--lr", "3"}), "train.py.1234");
  EXPECT_EQ(named("python3", {"python3", "-W", "ignore", "-X", "dev", "-OO", "train.py"}), "train.py.1234");
  EXPECT_EQ(named("python3.13t", {"python3", "-um", "torch.distributed.run", "x.py"}), "torch.distributed.run.1234");
  EXPECT_EQ(named("python", {"python", "-m", "pkg.mod"}), "pkg.mod.1234");
  EXPECT_EQ(named("python", {"python", "-mpkg.mod"}), "pkg.mod.1234");
  EXPECT_EQ(named("python3", {"python3", "-c", "import x"}), "python3.1234");
  EXPECT_EQ(named("python3", {"python3"}), "python3.1234");
  EXPECT_EQ(named("python3", {"python3", "--", "a/b.py"}), "b.py.1234");
  EXPECT_EQ(named("train", {"./train", "data.py"}), "train.1234");  // not an interpreter
}

// A process of a job: rank 3 of job 81723 under Slurm.
ProcessInfo ranked() {
  ProcessInfo p = info();
  p.job.launcher = "slurm";
  p.job.rank = 3;
  p.job.job_id = "81723";
  return p;
}

TEST(RunDirectory, RankAndJobPlaceholders) {
  EXPECT_EQ(expand_output_template("runs/%j/%R%e.%p", ranked()), "runs/81723/rank3.train.1234");
  EXPECT_EQ(expand_output_template("%r.%R", ranked()), "3.rank3.");
  // Without a launcher: %R gives nothing (gpumemprof run's names stay <exe>.<pid>), %r "0", %j "nojob".
  EXPECT_EQ(expand_output_template("runs/%j/%R%e.%p", info()), "runs/nojob/train.1234");
  EXPECT_EQ(expand_output_template("%r", info()), "3");  // info() sets the %r text directly
  ProcessInfo rank0 = ranked();
  rank0.job.rank = 0;
  EXPECT_EQ(expand_output_template("%R%e", rank0), "rank0.train");
  // A rank that was not a number (job.rank nullopt) is no rank.
  ProcessInfo unreadable = ranked();
  unreadable.job.rank.reset();
  EXPECT_EQ(expand_output_template("%R%e.%j", unreadable), "train.81723");
  // A job id is never a path: its '/' would make directories.
  ProcessInfo slashed = ranked();
  slashed.job.job_id = "a/b/../c";
  EXPECT_EQ(expand_output_template("%j", slashed), "a_b_.._c");
}

// Once per process: each logger is kept forever, so a second one would leak the first (LSan).
// Not inside the template below, which has one static per lambda type.
void configure_logger_once() {
  static const bool configured = (log::configure(LogLevel::Warn), true);
  (void)configured;
}

// What the logger writes to stderr while `f` runs.
template <typename F>
std::string stderr_of(F f) {
  configure_logger_once();
  ::testing::internal::CaptureStderr();
  f();
  return ::testing::internal::GetCapturedStderr();
}

TEST(RunDirectory, AcceptedPlaceholdersExpandWithoutWarning) {
  EXPECT_EQ(stderr_of([] { expand_output_template("runs/%e.%p.%h.%r.%R.%j.%t.100%%", ranked()); }), "");
}

TEST(RunDirectory, UnknownPlaceholderIsKeptWithOneWarning) {
  EXPECT_EQ(stderr_of([] { EXPECT_EQ(expand_output_template("runs/%z.%p", info()), "runs/%z.1234"); }),
            "gpumemprof: GPUMEMPROF_OUTPUT 'runs/%z.%p': not placeholders, kept as written: '%z'; "
            "accepted: %e %p %h %r %R %j %t %%\n");
}

TEST(RunDirectory, TrailingPercentIsKeptWithOneWarning) {
  EXPECT_EQ(stderr_of([] { EXPECT_EQ(expand_output_template("a%qb%x%", info()), "a%qb%x%"); }),
            "gpumemprof: GPUMEMPROF_OUTPUT 'a%qb%x%': not placeholders, kept as written: '%q', '%x', '%' at the end; "
            "accepted: %e %p %h %r %R %j %t %%\n");
}

TEST(RunDirectory, NeverReusesAnExistingDirectory) {
  char tmpl[] = "/tmp/gmp-rd-XXXXXX";
  const std::string root = mkdtemp(tmpl);
  std::string error;
  auto a = create_run_directory(root + "/deep/er/run", error);
  auto b = create_run_directory(root + "/deep/er/run", error);
  auto c = create_run_directory(root + "/deep/er/run", error);
  ASSERT_TRUE(a && b && c) << error;
  EXPECT_EQ(a->path, root + "/deep/er/run");
  EXPECT_EQ(b->path, root + "/deep/er/run.1");
  EXPECT_EQ(c->path, root + "/deep/er/run.2");
  struct stat st {}, held {};
  ASSERT_EQ(stat(a->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(fstat(a->dir.get(), &held), 0);  // the descriptor is of the directory made
  EXPECT_EQ(held.st_ino, st.st_ino);
  std::system(("rm -rf " + root).c_str());
}

// Giving a path to another user needs root, which CI has.
#define SKIP_UNLESS_ROOT() \
  if (geteuid() != 0) GTEST_SKIP() << "chown to another user needs root"

// A scratch directory, removed at the end of the test.
class RunDirectoryPath : public ::testing::Test {
 protected:

  // Gives `path`, which we created, to uid 4242; returns our uid (root: SKIP_UNLESS_ROOT first).
  static uid_t foreign(const std::string& path) {
    EXPECT_EQ(lchown(path.c_str(), 4242, 4242), 0);
    return geteuid();
  }
  static uid_t owner(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0);
    return st.st_uid;
  }
  static bool is_dir(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  test::TempDir tmp_;
  const std::string& root_ = tmp_.path;
};

TEST_F(RunDirectoryPath, AnotherUsersSymlinkInAParentIsNotFollowed) {
  SKIP_UNLESS_ROOT();
  ASSERT_EQ(mkdir((root_ + "/target").c_str(), 0700), 0);
  ASSERT_EQ(symlink("target", (root_ + "/link").c_str()), 0);
  const uid_t self = foreign(root_ + "/link");
  std::string error;
  EXPECT_FALSE(create_run_directory(root_ + "/link/deeper/run", error, self));
  EXPECT_EQ(error, "cannot create run directory '" + root_ + "/link/deeper/run': '" + root_ + "/link' is a symlink owned by uid " +
                       std::to_string(owner(root_ + "/link")) + ", neither root nor uid " + std::to_string(self) +
                       "; not following it");
  EXPECT_FALSE(is_dir(root_ + "/target/deeper"));
}

TEST_F(RunDirectoryPath, OurOwnSymlinksInParentsAreFollowed) {
  ASSERT_EQ(mkdir((root_ + "/target").c_str(), 0700), 0);
  ASSERT_EQ(symlink("target", (root_ + "/link").c_str()), 0);
  ASSERT_EQ(symlink((root_ + "/link").c_str(), (root_ + "/absolute").c_str()), 0);  // a chain of two
  std::string error;
  auto dir = create_run_directory(root_ + "/absolute/sub/run", error, geteuid());
  ASSERT_TRUE(dir) << error;
  EXPECT_EQ(dir->path, root_ + "/absolute/sub/run");
  EXPECT_TRUE(is_dir(root_ + "/target/sub/run"));
}

// As root, a root-owned symlink is followed whoever we are (/var/run -> /run).
TEST_F(RunDirectoryPath, RootsSymlinksAreFollowed) {
  SKIP_UNLESS_ROOT();
  ASSERT_EQ(mkdir((root_ + "/target").c_str(), 0777), 0);
  ASSERT_EQ(symlink("target", (root_ + "/link").c_str()), 0);
  std::string error;
  ASSERT_TRUE(create_run_directory(root_ + "/link/run", error, 4242)) << error;
  EXPECT_TRUE(is_dir(root_ + "/target/run"));
}

// Root's world-writable directory without the sticky bit, seen by uid 4242: anyone could rename
// what it creates there.
TEST_F(RunDirectoryPath, AWorldWritableDirectoryWithoutStickyBitIsNotWrittenIntoUnlessOurs) {
  SKIP_UNLESS_ROOT();
  const std::string shared = root_ + "/shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0777), 0);
  std::string error;
  EXPECT_FALSE(create_run_directory(shared + "/run", error, 4242));
  EXPECT_EQ(error, "cannot create run directory '" + shared + "/run': '" + shared +
                       "' is world-writable without the sticky bit and owned by uid 0; not writing into it");
  EXPECT_FALSE(create_run_directory(shared + "/missing/run", error, 4242));  // nor a parent made in it
  EXPECT_EQ(error, "cannot create run directory '" + shared + "/missing/run': '" + shared +
                       "' is world-writable without the sticky bit and owned by uid 0; not writing into it");
  EXPECT_FALSE(is_dir(shared + "/run") || is_dir(shared + "/missing"));
  // Passing through it to a directory that exists is not writing into it.
  ASSERT_EQ(mkdir((shared + "/mine").c_str(), 0700), 0);
  EXPECT_TRUE(create_run_directory(shared + "/mine/run", error, 4242)) << error;
  EXPECT_TRUE(create_run_directory(shared + "/run", error, 0)) << error;  // its owner writes into it
}

// Issue 28: a directory of another user anywhere on the way, written into or passed through, is
// refused (as OpenSSH refuses for its keys): its owner could swap what lies below it for a symlink
// once we checked it. Before, /tmp/runs pre-created by another user (not world-writable) was used.
TEST_F(RunDirectoryPath, ADirectoryOfAnotherUserOnThePathIsRefused) {
  SKIP_UNLESS_ROOT();
  const std::string theirs = root_ + "/theirs";
  ASSERT_EQ(mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((theirs + "/existing").c_str(), 0755), 0);
  const uid_t self = foreign(theirs);
  const std::string refused = "'" + theirs + "' is a directory owned by uid 4242, neither root nor uid " +
                              std::to_string(self) + "; not writing below it";
  std::string error;
  EXPECT_FALSE(create_run_directory(theirs + "/run", error, self));
  EXPECT_EQ(error, "cannot create run directory '" + theirs + "/run': " + refused);
  EXPECT_FALSE(create_run_directory(theirs + "/existing/run", error, self));
  EXPECT_EQ(error, "cannot create run directory '" + theirs + "/existing/run': " + refused);
  EXPECT_FALSE(create_run_directory(theirs + "/new/run", error, self));
  EXPECT_EQ(error, "cannot create run directory '" + theirs + "/new/run': " + refused);
  EXPECT_FALSE(is_dir(theirs + "/run") || is_dir(theirs + "/existing/run") || is_dir(theirs + "/new"));
  // Its owner may.
  EXPECT_TRUE(create_run_directory(theirs + "/existing/run", error, 4242)) << error;
}

TEST_F(RunDirectoryPath, StickyDirectoriesOfRootAndOurWorldWritableOnesAreWrittenInto) {
  SKIP_UNLESS_ROOT();
  const std::string sticky = root_ + "/tmp-like", own = root_ + "/own";
  ASSERT_EQ(mkdir(sticky.c_str(), 0700), 0);
  ASSERT_EQ(chmod(sticky.c_str(), 01777), 0);
  std::string error;
  EXPECT_TRUE(create_run_directory(sticky + "/run", error, 4242)) << error;  // /tmp, as anyone
  ASSERT_EQ(mkdir(own.c_str(), 0700), 0);
  ASSERT_EQ(chmod(own.c_str(), 0777), 0);
  EXPECT_TRUE(create_run_directory(own + "/run", error, geteuid())) << error;
  // A sticky directory of another user is not: its owner may rename anything in it.
  const uid_t self = foreign(sticky);
  EXPECT_FALSE(create_run_directory(sticky + "/run", error, self));
  EXPECT_EQ(error, "cannot create run directory '" + sticky + "/run': '" + sticky +
                       "' is a directory owned by uid 4242, neither root nor uid 0; not writing below it");
}

TEST_F(RunDirectoryPath, ARelativePathStartsAtTheWorkingDirectory) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(chdir(root_.c_str()), 0);
  std::string error;
  auto dir = create_run_directory("a/run", error, geteuid());
  auto plain = create_run_directory("plain", error, geteuid());
  ASSERT_EQ(chdir(cwd), 0);
  ASSERT_TRUE(dir && plain) << error;
  EXPECT_EQ(dir->path, "a/run");
  EXPECT_EQ(plain->path, "plain");
  EXPECT_TRUE(is_dir(root_ + "/a/run") && is_dir(root_ + "/plain"));
}

// The OOM directory (GPUMEMPROF_OOM_DIR) follows the same rules, and is never a symlink itself.
TEST_F(RunDirectoryPath, TheOomDirectoryFollowsTheSameRules) {
  SKIP_UNLESS_ROOT();
  ASSERT_EQ(mkdir((root_ + "/target").c_str(), 0700), 0);
  ASSERT_EQ(symlink("target", (root_ + "/link").c_str()), 0);
  std::string error;
  OwnedDir oom;
  EXPECT_TRUE(open_bundle_dir(root_ + "/link/oom", oom, error, geteuid())) << error;
  EXPECT_TRUE(is_dir(root_ + "/target/oom"));
  OwnedDir link;
  EXPECT_FALSE(open_bundle_dir(root_ + "/link", link, error, geteuid()));
  EXPECT_EQ(error, "OOM directory " + root_ + "/link is a symlink; not following it");

  const uid_t self = foreign(root_ + "/link");
  OwnedDir refused;
  EXPECT_FALSE(open_bundle_dir(root_ + "/link/oom", refused, error, self));
  EXPECT_EQ(error, "cannot open OOM directory " + root_ + "/link/oom: '" + root_ + "/link' is a symlink owned by uid " +
                       std::to_string(owner(root_ + "/link")) + ", neither root nor uid " + std::to_string(self) +
                       "; not following it");

  // Root's world-writable directory: not for uid 4242 without the sticky bit, fine with it.
  const std::string shared = root_ + "/shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0777), 0);
  EXPECT_FALSE(open_bundle_dir(shared, refused, error, 4242));
  EXPECT_EQ(error, "cannot open OOM directory " + shared + ": '" + shared +
                       "' is world-writable without the sticky bit and owned by uid 0; not writing into it");
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  OwnedDir sticky;
  EXPECT_TRUE(open_bundle_dir(shared, sticky, error, 4242)) << error;
  // Another user's, even sticky, is not.
  foreign(shared);
  OwnedDir theirs;
  EXPECT_FALSE(open_bundle_dir(shared, theirs, error, 0));
  EXPECT_EQ(error, "cannot open OOM directory " + shared + ": '" + shared +
                       "' is a directory owned by uid 4242, neither root nor uid 0; not writing below it");
}

TEST(RunDirectory, ReportsAnUncreatablePath) {
  std::string error;
  EXPECT_FALSE(create_run_directory("/proc/gmp-cannot-create/run", error));
  EXPECT_NE(error.find("/proc/gmp-cannot-create"), std::string::npos);
}

}  // namespace
}  // namespace gmp
