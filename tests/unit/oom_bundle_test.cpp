// OOM bundles on disk (collector/oom_bundle.h): retention in a directory shared with other users
// (only our own bundles count against the limits, and only they are removed), and every write and
// removal done in the directory that was opened, whatever its path leads to later.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "oom_bundle.h"
#include "temp_dir.h"

namespace gmp {
namespace {

class OomRetention : public ::testing::Test {
 protected:

  // A bundle of one 100-byte file, modified `age` seconds before the others' reference time.
  std::string bundle(const std::string& name, int age) {
    const std::string path = dir_ + "/oom_dump_" + name;
    EXPECT_EQ(mkdir(path.c_str(), 0700), 0);
    const int fd = open((path + "/metadata.json").c_str(), O_WRONLY | O_CREAT, 0600);
    EXPECT_EQ(write(fd, std::string(100, 'x').data(), 100), 100);
    close(fd);
    const timespec times[2] = {{1'700'000'000 - age, 0}, {1'700'000'000 - age, 0}};
    EXPECT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    return path;
  }
  bool exists(const std::string& path) const {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
  }
  static std::string name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }
  static std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }
  // The bundles' directory as the recorder holds it.
  const OwnedDir& opened() {
    if (!oom_.is_open()) {
      std::string error;
      EXPECT_TRUE(oom_.open(dir_, geteuid(), error, false)) << error;
    }
    return oom_;
  }

  test::TempDir tmp_;
  const std::string& dir_ = tmp_.path;
  OwnedDir oom_;
};

TEST_F(OomRetention, RemovesOurOldestBundlesBeyondTheLimit) {
  const std::string a = bundle("a", 30), b = bundle("b", 20), c = bundle("c", 10);
  EXPECT_EQ(apply_retention(opened(), 1, UINT64_MAX, name_of(c), geteuid()), (std::vector<std::string>{a, b}));
  EXPECT_TRUE(exists(c));
}

// The same bundles seen by another user: none is theirs, so none counts and none is removed.
TEST_F(OomRetention, AnotherUsersBundlesAreNeitherCountedNorRemoved) {
  const std::string a = bundle("a", 30), b = bundle("b", 20), c = bundle("c", 10);
  EXPECT_EQ(apply_retention(opened(), 0, 0, "", geteuid() + 1), std::vector<std::string>{});
  EXPECT_TRUE(exists(a) && exists(b) && exists(c));
}

// Three old bundles of another user and two of ours with room for two: nothing to remove. Needs
// root to give bundles another owner.
TEST_F(OomRetention, ForeignBundlesDoNotCountAgainstOurs) {
  if (geteuid() != 0) GTEST_SKIP() << "chown needs root";
  const uid_t other = 4242;
  for (const char* name : {"x", "y", "z"}) {
    const std::string path = bundle(name, 100);
    ASSERT_EQ(chown(path.c_str(), other, other), 0);
  }
  const std::string ours_old = bundle("old", 20), ours_new = bundle("new", 10);
  EXPECT_EQ(apply_retention(opened(), 2, UINT64_MAX, name_of(ours_new), geteuid()), std::vector<std::string>{});
  EXPECT_EQ(apply_retention(opened(), 1, UINT64_MAX, name_of(ours_new), geteuid()),
            std::vector<std::string>{ours_old});
  for (const char* name : {"x", "y", "z"}) EXPECT_TRUE(exists(dir_ + "/oom_dump_" + name)) << name;
  // By size as well: their 300 bytes do not count against our 200.
  const std::string ours_newer = bundle("newer", 5);
  EXPECT_EQ(apply_retention(opened(), 10, 200, name_of(ours_newer), geteuid()), std::vector<std::string>{});
}

// Issue 28: retention removes from the directory it opened. Its path renamed away and replaced
// (by a symlink to another directory of ours, with an old bundle in it), the old path's bundles
// stay, and the opened directory's oldest goes.
TEST_F(OomRetention, RemovesFromTheDirectoryItOpenedWhateverItsPathLeadsToNow) {
  const std::string a = bundle("a", 30), b = bundle("b", 20);
  const OwnedDir& oom = opened();
  const std::string moved = dir_ + ".moved", other = dir_ + ".other";
  ASSERT_EQ(rename(dir_.c_str(), moved.c_str()), 0);
  ASSERT_EQ(mkdir(other.c_str(), 0700), 0);
  ASSERT_EQ(symlink(other.c_str(), dir_.c_str()), 0);
  const std::string elsewhere = bundle("x", 100);  // through the symlink: in `other`
  EXPECT_EQ(apply_retention(oom, 1, UINT64_MAX, "oom_dump_b", geteuid()), std::vector<std::string>{a});
  EXPECT_FALSE(exists(moved + "/oom_dump_a"));
  EXPECT_TRUE(exists(moved + "/oom_dump_b"));
  EXPECT_TRUE(exists(other + "/oom_dump_x/metadata.json")) << elsewhere;
  ASSERT_EQ(unlink(dir_.c_str()), 0);
  ASSERT_EQ(rename(moved.c_str(), dir_.c_str()), 0);  // for TempDir to remove
  std::system(("rm -rf " + other).c_str());
}

// Issue 28: a bundle swapped for a symlink after it was written is not written through when its
// episode is updated (a file elsewhere would be replaced by our metadata.json).
TEST_F(OomRetention, AnUpdateIsNeverWrittenThroughASymlinkInPlaceOfTheBundle) {
  const OwnedDir& oom = opened();
  std::string error;
  ASSERT_TRUE(write_bundle(oom, "oom_dump_b", {{"metadata.json", {{"failures", 1}}}}, error)) << error;
  const std::string victim = dir_ + "/victim";
  ASSERT_EQ(mkdir(victim.c_str(), 0700), 0);
  std::ofstream(victim + "/metadata.json") << "theirs";
  ASSERT_EQ(rename((dir_ + "/oom_dump_b").c_str(), (dir_ + "/kept_b").c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), (dir_ + "/oom_dump_b").c_str()), 0);
  EXPECT_FALSE(rewrite_bundle_file(oom, "oom_dump_b", {"metadata.json", {{"failures", 2}}}));
  std::ifstream in(victim + "/metadata.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "theirs");
  EXPECT_EQ(std::vector<std::string>{}, apply_retention(oom, 0, 0, "", geteuid()));  // nor removed through it
  EXPECT_TRUE(exists(victim + "/metadata.json"));
}

// A bundle is complete or absent, with files 0600 under a temporary name nobody can guess.
TEST_F(OomRetention, ABundleIsWrittenWholeUnderItsName) {
  std::string error;
  ASSERT_TRUE(write_bundle(opened(), "oom_dump_c", {{"metadata.json", {{"failures", 1}}}, {"events.json", {}}}, error))
      << error;
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/oom_dump_c/metadata.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(exists(dir_ + "/oom_dump_c/events.json"));
  EXPECT_FALSE(write_bundle(opened(), "oom_dump_c", {{"metadata.json", {}}}, error));  // never over another
  EXPECT_EQ(error.rfind("cannot rename " + dir_ + "/.tmp.oom_dump_c.", 0), 0u) << error;
  ASSERT_TRUE(rewrite_bundle_file(opened(), "oom_dump_c", {"metadata.json", {{"failures", 2}}}));
  std::ifstream in(dir_ + "/oom_dump_c/metadata.json");
  EXPECT_EQ(nlohmann::json::parse(in)["failures"], 2);
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"oom_dump_c"});  // no temporary left
}

}  // namespace
}  // namespace gmp
