// Secrets in the profiled program's environment and command line reach no file: not the run
// directory (manifest, OOM bundle, log), not the HTML report, not `gpumemprof oom --json`.
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "harness.h"

namespace gmp::test {
namespace {

// Every regular file under `dir`, recursively.
void files_under(const std::string& dir, std::vector<std::string>& out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) files_under(path, out);
    if (S_ISREG(st.st_mode)) out.push_back(path);
  }
  closedir(d);
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Redaction, NoPlantedSecretReachesAnyFile) {
  Sandbox box;
  // Each secret is a distinct word, so that finding it anywhere is a leak.
  const std::map<std::string, std::string> env = {
      {"FAKE_CUDA_CAPACITY", "1G"},
      {"DATABASE_URL", "postgres://app:PlantedA1@db.internal:5432/prod"},
      {"REDIS_URL", "redis://:PlantedB2@cache:6379/0"},
      {"SENTRY_DSN", "https://PlantedC3@o1.ingest.sentry.io/1"},
      {"SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T0/B0/PlantedD4"},
      {"AZURE_STORAGE_CONNECTION_STRING", "AccountName=acct;AccountKey=PlantedE5;EndpointSuffix=core.windows.net"},
      {"HTTPS_PROXY", "http://proxyuser:PlantedF6@proxy:3128"},
      {"MYSQL_PWD", "PlantedG7"},
      {"DB_PASS", "PlantedH8"},
      {"PASSWD", "PlantedI9"},
      {"GH_PAT", "PlantedJ10"},
      {"COOKIE", "session=PlantedK11"},
      {"HF_TOKEN", "PlantedL12"},
      {"EXTRA_ARGS", "--password=PlantedM13 -v"},
      {"GPUMEMPROF_ON_ALERT", "/bin/true https://hooks.slack.com/services/T0/B0/PlantedR18"},
  };
  const std::vector<std::string> argv = {Paths::bin("prog_ops"), "alloc:256M", "expect_fail:2G", "--",
                                         "--password=PlantedN14", "--api-key", "PlantedO15", "DB_PASSWORD=PlantedP16",
                                         "https://user:PlantedQ17@example.com/data", "--batch-size=32"};
  RunResult r = box.run(argv, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = box.only_run_dir();

  // The redacted forms are there: what was kept is what the reader needs.
  const nlohmann::json expected_argv = {Paths::bin("prog_ops"), "alloc:256M", "expect_fail:2G", "--",
                                        "--password=<redacted>", "--api-key", "<redacted>", "DB_PASSWORD=<redacted>",
                                        "https://user:<redacted>@example.com/data", "--batch-size=32"};
  EXPECT_EQ(read_json_file(run + "/manifest.json")["argv"], expected_argv);
  std::vector<std::string> bundle_files;
  files_under(run + "/oom", bundle_files);
  const auto environment = std::find_if(bundle_files.begin(), bundle_files.end(), [](const std::string& f) {
    return f.size() >= 17 && f.compare(f.size() - 17, 17, "/environment.json") == 0;
  });
  ASSERT_NE(environment, bundle_files.end());
  const nlohmann::json e = read_json_file(*environment);
  EXPECT_EQ(e["argv"], expected_argv);
  EXPECT_EQ(e["environment"]["DATABASE_URL"], "postgres://app:<redacted>@db.internal:5432/prod");
  EXPECT_EQ(e["environment"]["HTTPS_PROXY"], "http://proxyuser:<redacted>@proxy:3128");
  EXPECT_EQ(e["environment"]["EXTRA_ARGS"], "--password=<redacted> -v");
  EXPECT_EQ(e["environment"]["MYSQL_PWD"], "<redacted>");
  EXPECT_EQ(e["environment"]["FAKE_CUDA_CAPACITY"], "1G");
  EXPECT_EQ(read_json_file(run + "/manifest.json")["config"]["on_alert"],
            "/bin/true https://hooks.slack.com/<redacted>");

  ASSERT_EQ(run_tool({"html", run, "-o", box.dir() + "/report.html"}).exit_code, 0);
  RunResult oom = run_tool({"oom", run, "--json"});
  ASSERT_EQ(oom.exit_code, 0) << oom.err;

  std::vector<std::string> files;
  files_under(box.dir(), files);  // the run directory, the report, the program's stdout and stderr
  ASSERT_GE(files.size(), 10u);
  for (const std::string& f : files) {
    const std::string text = contents(f);
    for (int i = 1; i <= 18; ++i) {
      const std::string secret = std::string("Planted") + static_cast<char>('A' + i - 1) + std::to_string(i);
      EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << f;
    }
  }
  for (int i = 1; i <= 18; ++i) {
    const std::string secret = std::string("Planted") + static_cast<char>('A' + i - 1) + std::to_string(i);
    EXPECT_EQ(oom.out.find(secret), std::string::npos) << secret << " in gpumemprof oom --json";
  }
}

}  // namespace
}  // namespace gmp::test
