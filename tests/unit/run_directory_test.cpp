#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "run_directory.h"

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

TEST(RunDirectory, NeverReusesAnExistingDirectory) {
  char tmpl[] = "/tmp/gmp-rd-XXXXXX";
  const std::string root = mkdtemp(tmpl);
  std::string error;
  auto a = create_run_directory(root + "/deep/er/run", error);
  auto b = create_run_directory(root + "/deep/er/run", error);
  auto c = create_run_directory(root + "/deep/er/run", error);
  ASSERT_TRUE(a && b && c) << error;
  EXPECT_EQ(*a, root + "/deep/er/run");
  EXPECT_EQ(*b, root + "/deep/er/run.1");
  EXPECT_EQ(*c, root + "/deep/er/run.2");
  struct stat st {};
  ASSERT_EQ(stat(a->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::system(("rm -rf " + root).c_str());
}

TEST(RunDirectory, ReportsAnUncreatablePath) {
  std::string error;
  EXPECT_FALSE(create_run_directory("/proc/gmp-cannot-create/run", error));
  EXPECT_NE(error.find("/proc/gmp-cannot-create"), std::string::npos);
}

}  // namespace
}  // namespace gmp
