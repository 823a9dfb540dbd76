// Output paths another user could redirect (docs/run-directory.md, "Symlinks and ownership"): the
// program runs on unprofiled, and one line names the component refused; and what another user
// who can write into a directory on the way can do once the run directory exists: nothing to
// where our files go. Acting as another user needs root, which CI has.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "harness.h"
#include "oom_bundle_reader.h"

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

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Issue 28: /tmp/runs made by another user (not world-writable, so accepted before): its owner
// could swap our run directory for a symlink once it is made, so it is not used.
TEST(OutputPath, ADirectoryOfAnotherUserOnThePathTurnsProfilingOff) {
  SKIP_UNLESS_ROOT();
  Sandbox box;
  const std::string tmp = box.dir() + "/tmp", runs = tmp + "/runs";
  ASSERT_EQ(chmod(box.dir().c_str(), 0755), 0);
  ASSERT_EQ(mkdir(tmp.c_str(), 0700), 0);
  ASSERT_EQ(chmod(tmp.c_str(), 01777), 0);
  ASSERT_EQ(as_other_user([&] { return mkdir(runs.c_str(), 0755) == 0 ? 0 : 1; }), 0);
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1M", "free_last"}, {{"GPUMEMPROF_OUTPUT", runs + "/run.%p"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "ok\n");
  const std::string prefix = "gpumemprof: cannot create run directory '" + runs + "/run.";
  const std::string suffix = "': '" + runs + "' is a directory owned by uid " + std::to_string(other_user().uid) +
                             ", neither root nor uid 0; not writing below it; profiling is off for this process\n";
  ASSERT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  ASSERT_GT(r.err.size(), suffix.size());
  EXPECT_EQ(r.err.substr(r.err.size() - suffix.size()), suffix) << r.err;
  EXPECT_EQ(rmdir(runs.c_str()), 0) << "nothing was made in it";
}

// Issue 28: a directory on the way that another user can write into (root's, group-writable by
// theirs): once our run directory exists there, they rename it away and put a symlink of theirs
// in its place, leading to a directory of theirs whose oom/<our bundle> leads to a directory of
// root's. Our files still go to our directory, where it is now: the episode's update, the
// summary. Before, both went through the symlinks (root's metadata.json replaced another file).
TEST(OutputPath, ARunDirectorySwappedForASymlinkByAnotherUserKeepsOurFiles) {
  SKIP_UNLESS_ROOT();
  Sandbox box;
  const std::string shared = box.dir() + "/shared", run = shared + "/run", moved = shared + "/run.real";
  const std::string fake = shared + "/fake", victim = box.dir() + "/victim", go = box.dir() + "/go";
  ASSERT_EQ(chmod(box.dir().c_str(), 0755), 0);
  ASSERT_EQ(mkdir(shared.c_str(), 0775), 0);
  ASSERT_EQ(chown(shared.c_str(), 0, other_user().gid), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0775), 0);
  ASSERT_EQ(mkdir(victim.c_str(), 0700), 0);
  std::ofstream(victim + "/metadata.json") << "root's own";
  int out = -1;
  const pid_t pid = box.spawn({Paths::bin("prog_ops"), "alloc:256M", "expect_fail:2G", "print:ready", "wait:" + go,
                               "expect_fail:2G"},
                              {{"GPUMEMPROF_OUTPUT", run}, {"FAKE_CUDA_CAPACITY", "1G"}, {"GPUMEMPROF_STACKS", "0"}},
                              &out);
  ASSERT_EQ(read_line(out, 30000), "ready");
  const std::vector<std::string> bundles = reader::list_oom_bundles(run + "/oom");
  ASSERT_EQ(bundles.size(), 1u);
  const std::string bundle = bundles[0].substr(bundles[0].rfind('/') + 1);
  const int swapped = as_other_user([&] {
    return rename(run.c_str(), moved.c_str()) == 0 && mkdir(fake.c_str(), 0777) == 0 &&
                   mkdir((fake + "/oom").c_str(), 0777) == 0 &&
                   symlink(victim.c_str(), (fake + "/oom/" + bundle).c_str()) == 0 && symlink("fake", run.c_str()) == 0
               ? 0
               : 1;
  });
  std::ofstream(go) << "";
  RunResult r = wait_for(pid, out, -1, 60);
  close(out);
  ASSERT_EQ(swapped, 0);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(text_of(victim + "/metadata.json"), "root's own");
  EXPECT_FALSE(exists(fake + "/summary.json"));
  EXPECT_EQ(read_json_file(moved + "/summary.json")["ended_by"], "exit");
  EXPECT_EQ(read_json_file(moved + "/oom/" + bundle + "/metadata.json")["failures"], 2);
}

}  // namespace
}  // namespace gmp::test
