// OOM bundle retention in a directory shared with other users (collector/oom_bundle.h): only our
// own bundles count against the limits, and only they are removed.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

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

  test::TempDir tmp_;
  const std::string& dir_ = tmp_.path;
};

TEST_F(OomRetention, RemovesOurOldestBundlesBeyondTheLimit) {
  const std::string a = bundle("a", 30), b = bundle("b", 20), c = bundle("c", 10);
  EXPECT_EQ(apply_retention(dir_, 1, UINT64_MAX, c, geteuid()), (std::vector<std::string>{a, b}));
  EXPECT_TRUE(exists(c));
}

// The same bundles seen by another user: none is theirs, so none counts and none is removed.
TEST_F(OomRetention, AnotherUsersBundlesAreNeitherCountedNorRemoved) {
  const std::string a = bundle("a", 30), b = bundle("b", 20), c = bundle("c", 10);
  EXPECT_EQ(apply_retention(dir_, 0, 0, "", geteuid() + 1), std::vector<std::string>{});
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
  EXPECT_EQ(apply_retention(dir_, 2, UINT64_MAX, ours_new, geteuid()), std::vector<std::string>{});
  EXPECT_EQ(apply_retention(dir_, 1, UINT64_MAX, ours_new, geteuid()), std::vector<std::string>{ours_old});
  for (const char* name : {"x", "y", "z"}) EXPECT_TRUE(exists(dir_ + "/oom_dump_" + name)) << name;
  // By size as well: their 300 bytes do not count against our 200.
  const std::string ours_newer = bundle("newer", 5);
  EXPECT_EQ(apply_retention(dir_, 10, 200, ours_newer, geteuid()), std::vector<std::string>{});
}

}  // namespace
}  // namespace gmp
