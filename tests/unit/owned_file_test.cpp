// OwnedFile and OwnedDir: a descriptor the program took over is never written to; our file is
// reopened by name in our directory when it still is ours, and writing stops when it is not, or
// when it was removed; our directory's descriptor is reached again by its path only when that
// still leads to the same directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "owned_file.h"
#include "temp_dir.h"

namespace gmp {
namespace {

class OwnedFileTest : public ::testing::Test {
 protected:
  std::string text(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }
  // The descriptor of `path` in this process, found through /proc (OwnedFile keeps its own private).
  int descriptor_of(const std::string& path) {
    for (int fd = 0; fd < 4096; ++fd) {
      char target[4096];
      const ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), target, sizeof target - 1);
      if (n > 0 && std::string(target, static_cast<size_t>(n)) == path) return fd;
    }
    return -1;
  }
  const OwnedDir& held() {
    if (!held_.is_open()) {
      std::string error;
      EXPECT_TRUE(held_.open(dir_, geteuid(), error, false)) << error;
    }
    return held_;
  }

  test::TempDir tmp_;
  const std::string& dir_ = tmp_.path;
  OwnedDir held_;
};

TEST_F(OwnedFileTest, CreatesPrivateCloseOnExecFileAtAHighDescriptor) {
  OwnedFile f;
  ASSERT_TRUE(f.create(held(), "ours", true));
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/ours").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const int fd = descriptor_of(dir_ + "/ours");
  ASSERT_GE(fd, 0);
  EXPECT_GE(fd, 900);
  EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  OwnedFile again;
  EXPECT_FALSE(again.create(held(), "ours", true));  // exclusive
}

TEST_F(OwnedFileTest, TakenOverDescriptorIsLeftAloneAndOurFileReopened) {
  OwnedFile f;
  ASSERT_TRUE(f.create(held(), "ours", true));
  ASSERT_TRUE(f.append("a", 1));
  const int fd = descriptor_of(dir_ + "/ours");
  const int theirs = open((dir_ + "/theirs").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_EQ(dup2(theirs, fd), fd);
  ASSERT_TRUE(f.append("b", 1));
  EXPECT_EQ(text("ours"), "ab");
  EXPECT_EQ(text("theirs"), "");
  EXPECT_EQ(f.reopened(), 1u);
  // The program still owns the number we lost: it stays open.
  EXPECT_NE(fcntl(fd, F_GETFD), -1);
  close(fd);
  close(theirs);
}

TEST_F(OwnedFileTest, ClosedDescriptorIsReopened) {
  OwnedFile f;
  ASSERT_TRUE(f.create(held(), "ours", true));
  close(descriptor_of(dir_ + "/ours"));
  ASSERT_TRUE(f.append("x", 1));
  EXPECT_EQ(text("ours"), "x");
}

TEST_F(OwnedFileTest, AnotherFileUnderOurNameIsNeverWritten) {
  OwnedFile f;
  ASSERT_TRUE(f.create(held(), "ours", true));
  close(descriptor_of(dir_ + "/ours"));
  ASSERT_EQ(unlink((dir_ + "/ours").c_str()), 0);
  std::ofstream(dir_ + "/ours") << "other";
  EXPECT_FALSE(f.append("x", 1));
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(text("ours"), "other");
}

TEST_F(OwnedFileTest, ARemovedFileIsNotWrittenAnyMore) {
  OwnedFile f;
  ASSERT_TRUE(f.create(held(), "ours", true));
  ASSERT_TRUE(f.append("a", 1));
  ASSERT_EQ(unlink((dir_ + "/ours").c_str()), 0);
  EXPECT_FALSE(f.append("b", 1));  // the bytes would land in a file no one can read
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(f.reopened(), 0u);
}

// The program closed every descriptor (closefrom), ours of the directory and the file included:
// both are reached again, by the directory's path, which still leads to it.
TEST_F(OwnedFileTest, ClosedDirectoryAndFileDescriptorsAreReachedAgain) {
  OwnedFile f;
  ASSERT_TRUE(f.create(held(), "ours", true));
  close(descriptor_of(dir_ + "/ours"));
  close(descriptor_of(dir_));
  ASSERT_TRUE(f.append("x", 1));
  EXPECT_EQ(text("ours"), "x");
  EXPECT_GE(descriptor_of(dir_), 0);
}

// The program put a directory of its own on our directory's number: it is left alone, and ours is
// reached again by its path; when the path leads elsewhere (our directory was moved and another
// made in its place), nothing is written there.
TEST_F(OwnedFileTest, ADirectoryDescriptorTakenOverIsLeftAloneAndOnlyOurDirectoryReachedAgain) {
  held();
  const int fd = descriptor_of(dir_);
  ASSERT_GE(fd, 0);
  const std::string theirs = dir_ + "/theirs";
  ASSERT_EQ(mkdir(theirs.c_str(), 0700), 0);
  const int their_fd = open(theirs.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_EQ(dup2(their_fd, fd), fd);
  EXPECT_NE(held().fd(), fd);
  OwnedFile f;
  ASSERT_TRUE(f.create(held(), "ours", true));
  EXPECT_TRUE(exists(dir_ + "/ours"));
  EXPECT_FALSE(exists(theirs + "/ours"));
  EXPECT_NE(fcntl(fd, F_GETFD), -1);  // still the program's
  close(fd);
  close(their_fd);

  const std::string moved = dir_ + ".moved";
  ASSERT_EQ(rename(dir_.c_str(), moved.c_str()), 0);
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  close(descriptor_of(moved));
  OwnedFile g;
  EXPECT_FALSE(g.create(held(), "other", true));
  EXPECT_EQ(errno, ENOENT);
  EXPECT_FALSE(exists(dir_ + "/other"));
  std::system(("rm -rf " + moved).c_str());
}

}  // namespace
}  // namespace gmp
