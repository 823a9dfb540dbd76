// Finding and ordering the run directories of a job (tools/reader/job_directory.h).
#include "job_directory.h"

#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace gmp::reader {
namespace {

using test::TempDir;

// A run directory of a process that used no device: a manifest.json and a summary.json listing none.
void run_dir(const std::string& path, const std::string& manifest) {
  mkdir(path.c_str(), 0700);
  std::ofstream(path + "/manifest.json") << manifest;
  std::ofstream(path + "/summary.json") << R"({"schema_version":1,"clean_exit":true,"devices":[]})";
}

std::vector<std::string> names(const std::vector<JobMember>& members, const std::string& root) {
  std::vector<std::string> out;
  for (const JobMember& m : members) out.push_back(m.path.substr(root.size() + 1));
  return out;
}

TEST(JobDirectory, FindsRunsDownToThreeLevelsOrderedByRankThenHostThenPid) {
  TempDir t;
  const std::string& r = t.path;
  mkdir((r + "/node2").c_str(), 0700);
  mkdir((r + "/node1").c_str(), 0700);
  run_dir(r + "/node2/b", R"({"rank":2,"host":"node2","pid":30})");
  run_dir(r + "/node1/a", R"({"rank":"1","host":"node1","pid":20})");  // an older manifest's rank
  run_dir(r + "/z", R"({"rank":0,"host":"node1","pid":99})");
  run_dir(r + "/helper.7", R"({"rank":null,"host":"node1","pid":7})");  // no launcher: after the ranks
  run_dir(r + "/helper.5", R"({"rank":null,"host":"node1","pid":5})");
  mkdir((r + "/z/oom").c_str(), 0700);  // inside a run: never searched
  run_dir(r + "/z/oom/inner", R"({"rank":0})");
  for (const char* d : {"/a", "/a/b", "/a/b/c"}) mkdir((r + d).c_str(), 0700);
  run_dir(r + "/a/b/c/too-deep", R"({"rank":3})");
  std::string error;
  auto job = open_job_directory(r + "/", error);
  ASSERT_TRUE(job) << error;
  EXPECT_EQ(names(*job, r), (std::vector<std::string>{"z", "node1/a", "node2/b", "helper.5", "helper.7"}));
  for (const JobMember& m : *job) EXPECT_TRUE(m.run) << m.path << ": " << m.error;
}

TEST(JobDirectory, AnUnreadableMemberIsListedWithItsError) {
  TempDir t;
  run_dir(t.path + "/good", R"({"rank":0})");
  run_dir(t.path + "/bad", "{ not json");
  std::string error;
  auto job = open_job_directory(t.path, error);
  ASSERT_TRUE(job) << error;
  ASSERT_EQ(job->size(), 2u);
  EXPECT_EQ((*job)[0].path, t.path + "/good");
  EXPECT_EQ((*job)[1].path, t.path + "/bad");
  EXPECT_FALSE((*job)[1].run);
  EXPECT_NE((*job)[1].error.find("manifest.json"), std::string::npos) << (*job)[1].error;
}

TEST(JobDirectory, RefusesWhatIsNoJob) {
  TempDir t;
  std::string error;
  EXPECT_FALSE(open_job_directory(t.path + "/missing", error));
  EXPECT_EQ(error, t.path + "/missing is not a directory");
  mkdir((t.path + "/empty").c_str(), 0700);
  EXPECT_FALSE(open_job_directory(t.path, error));
  EXPECT_EQ(error, t.path + " holds no gpumemprof run directory (none with a manifest.json or trace.gmpt, 3 levels down)");
  EXPECT_FALSE(looks_like_run_directory(t.path));
  run_dir(t.path + "/empty/r", "{}");
  EXPECT_TRUE(looks_like_run_directory(t.path + "/empty/r"));
}

}  // namespace
}  // namespace gmp::reader
