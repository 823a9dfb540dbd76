// OwnedFile: a descriptor the program took over is never written to; our file is reopened by path
// when it still is ours, and writing stops when it is not, or when it was removed.
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
  // The descriptor of `path` in this process, found through /proc (OwnedFile keeps its own private).
  int descriptor_of(const std::string& path) {
    for (int fd = 0; fd < 4096; ++fd) {
      char target[4096];
      const ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), target, sizeof target - 1);
      if (n > 0 && std::string(target, static_cast<size_t>(n)) == path) return fd;
    }
    return -1;
  }
  test::TempDir tmp_;
  const std::string& dir_ = tmp_.path;
};

TEST_F(OwnedFileTest, CreatesPrivateCloseOnExecFileAtAHighDescriptor) {
  OwnedFile f;
  ASSERT_TRUE(f.create(dir_ + "/ours", true));
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/ours").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const int fd = descriptor_of(dir_ + "/ours");
  ASSERT_GE(fd, 0);
  EXPECT_GE(fd, 900);
  EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  OwnedFile again;
  EXPECT_FALSE(again.create(dir_ + "/ours", true));  // exclusive
}

TEST_F(OwnedFileTest, TakenOverDescriptorIsLeftAloneAndOurFileReopened) {
  OwnedFile f;
  ASSERT_TRUE(f.create(dir_ + "/ours", true));
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
  ASSERT_TRUE(f.create(dir_ + "/ours", true));
  close(descriptor_of(dir_ + "/ours"));
  ASSERT_TRUE(f.append("x", 1));
  EXPECT_EQ(text("ours"), "x");
}

TEST_F(OwnedFileTest, AnotherFileUnderOurNameIsNeverWritten) {
  OwnedFile f;
  ASSERT_TRUE(f.create(dir_ + "/ours", true));
  close(descriptor_of(dir_ + "/ours"));
  ASSERT_EQ(unlink((dir_ + "/ours").c_str()), 0);
  std::ofstream(dir_ + "/ours") << "other";
  EXPECT_FALSE(f.append("x", 1));
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(text("ours"), "other");
}

TEST_F(OwnedFileTest, ARemovedFileIsNotWrittenAnyMore) {
  OwnedFile f;
  ASSERT_TRUE(f.create(dir_ + "/ours", true));
  ASSERT_TRUE(f.append("a", 1));
  ASSERT_EQ(unlink((dir_ + "/ours").c_str()), 0);
  EXPECT_FALSE(f.append("b", 1));  // the bytes would land in a file no one can read
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(f.reopened(), 0u);
}

}  // namespace
}  // namespace gmp
