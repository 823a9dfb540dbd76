// Output paths another user could redirect (docs/run-directory.md, "Symlinks and ownership"): the
// program runs on unprofiled, and one line names the component refused. Giving a symlink to
// another user needs root, which CI has.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

namespace gmp::test {
namespace {

// <sandbox>/link -> <sandbox>/target, owned by uid 4242.
std::string foreign_symlink(const Sandbox& box) {
  const std::string target = box.dir() + "/target", link = box.dir() + "/link";
  EXPECT_EQ(mkdir(target.c_str(), 0755), 0);
  EXPECT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(lchown(link.c_str(), 4242, 4242), 0);
  return link;
}

TEST(OutputPath, AnotherUsersSymlinkInTheRunDirectoryPathTurnsProfilingOff) {
  if (geteuid() != 0) GTEST_SKIP() << "lchown to another user needs root";
  Sandbox box;
  const std::string link = foreign_symlink(box);
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1M", "free_last"}, {{"GPUMEMPROF_OUTPUT", link + "/run.%p"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "ok\n");
  const std::string prefix = "gpumemprof: cannot create run directory '" + link + "/run.";
  const std::string suffix = "': '" + link +
                             "' is a symlink owned by uid 4242, neither root nor uid 0; not following it; profiling is "
                             "off for this process\n";
  ASSERT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  EXPECT_EQ(r.err.substr(r.err.size() - suffix.size()), suffix) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_TRUE(box.run_dirs().empty());
  EXPECT_EQ(rmdir((box.dir() + "/target").c_str()), 0) << "the symlink's target stayed empty";
}

TEST(OutputPath, AnotherUsersSymlinkInTheOomDirectoryPathWritesNoBundle) {
  if (geteuid() != 0) GTEST_SKIP() << "lchown to another user needs root";
  Sandbox box;
  const std::string link = foreign_symlink(box);
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:256M", "expect_fail:2G"},
                        {{"FAKE_CUDA_CAPACITY", "1G"}, {"GPUMEMPROF_OOM_DIR", link + "/oom"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpumemprof: out of memory, but the OOM bundle could not be written: cannot open OOM directory " +
                       link + "/oom: '" + link + "' is a symlink owned by uid 4242, neither root nor uid 0; not following it\n");
  EXPECT_FALSE(exists(box.dir() + "/target/oom"));
  EXPECT_EQ(read_json_file(box.only_run_dir() + "/summary.json")["oom"]["bundles_written"], 0);
}

// `gpumemprof run -o ROOT` through another user's symlink, to ROOT's parent or to ROOT itself: refused
// before the command runs, as GPUMEMPROF_OUTPUT through it is (run used to resolve the link and hand
// the processes a path without it, so the rule never saw the link). A link of our own is followed.
TEST(OutputPath, RunRefusesARootThroughAnotherUsersSymlink) {
  if (geteuid() != 0) GTEST_SKIP() << "lchown to another user needs root";
  Sandbox box;
  const std::string link = foreign_symlink(box), marker = box.dir() + "/ran";
  for (const std::string& root : {link + "/runs", link}) {
    SCOPED_TRACE(root);
    RunResult r = box.run(run_args(root, {"/bin/touch", marker}), tool_env());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "gpumemprof run: cannot use -o " + root + ": '" + link +
                         "' is a symlink owned by uid 4242, neither root nor uid 0; not following it\n");
    EXPECT_FALSE(exists(marker)) << "the command ran";
  }
  EXPECT_EQ(rmdir((box.dir() + "/target").c_str()), 0) << "the symlink's target stayed empty";

  ASSERT_EQ(mkdir((box.dir() + "/target").c_str(), 0755), 0);
  ASSERT_EQ(symlink((box.dir() + "/target").c_str(), (box.dir() + "/own").c_str()), 0);
  RunResult r = box.run(run_args(box.dir() + "/own/runs", {Paths::bin("prog_ops"), "alloc:1M"}), tool_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("gpumemprof: 1 profiled process under " + box.dir() + "/target/runs\n"), std::string::npos)
      << r.err;
}

TEST(OutputPath, AnUnknownTemplateSequenceIsKeptWithOneWarning) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1M"}, {{"GPUMEMPROF_OUTPUT", box.dir() + "/run.%z"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "gpumemprof: GPUMEMPROF_OUTPUT '" + box.dir() +
                       "/run.%z': not placeholders, kept as written: '%z'; accepted: %e %p %h %r %R %j %t %%\n");
  EXPECT_TRUE(exists(box.dir() + "/run.%z/manifest.json"));
}

}  // namespace
}  // namespace gmp::test
