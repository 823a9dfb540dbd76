// Jobs: several ranks of one launch under `gpumemprof run -o ROOT`, and the job view of ROOT (report,
// report --json, html, export --format perfetto). The launcher is a shell script standing in for
// torchrun: it starts one prog_ops per rank with torchrun's RANK, LOCAL_RANK, WORLD_SIZE and
// TORCHELASTIC_RUN_ID, so every figure follows from the ops each rank was given.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// A launched job: its ROOT, what `gpumemprof run` said, and each rank's run directory and pid.
struct Job {
  std::string root;
  RunResult run;
  std::vector<std::string> dirs;  // by rank
  std::vector<std::string> pids;
};

// Runs `gpumemprof run -o ROOT -- launcher`, where the launcher starts rank r as `prog_ops ops[r]`
// with torchrun's variables (`torchrun` false: RANK and WORLD_SIZE alone, as a plain script sets them).
Job launch(const Sandbox& box, const std::vector<std::string>& ops, bool torchrun = true) {
  const std::string launcher = box.dir() + "/launch.sh";
  {
    std::ofstream f(launcher);
    f << "#!/bin/sh\n";
    for (size_t r = 0; r < ops.size(); ++r) {
      f << "RANK=" << r << " WORLD_SIZE=" << ops.size()
        << (torchrun ? " LOCAL_RANK=" + std::to_string(r) + " TORCHELASTIC_RUN_ID=job42 " : " ")
        << Paths::bin("prog_ops") << " " << ops[r] << " >/dev/null &\n";
    }
    f << "wait\n";
  }
  chmod(launcher.c_str(), 0755);
  Job job;
  job.root = box.dir() + "/runs";
  job.run = box.run(run_args(job.root, {launcher}), tool_env());
  std::vector<std::string> entries;
  for (const auto& e : std::filesystem::directory_iterator(job.root)) entries.push_back(e.path().string());
  for (size_t r = 0; r < ops.size(); ++r) {
    const std::string prefix = job.root + "/rank" + std::to_string(r) + ".prog_ops.";
    for (const std::string& d : entries) {
      if (d.rfind(prefix, 0) == 0) {
        job.dirs.push_back(d);
        job.pids.push_back(d.substr(prefix.size()));
      }
    }
  }
  EXPECT_EQ(entries.size(), ops.size()) << "directories under " << job.root;
  return job;
}

// The report's text with its wall-clock figures made comparable: times ("12.3 ms", "1.234 s") read
// T, the start time TIME, and runs of spaces (the table's alignment follows the times) one space.
std::string masked(const std::string& text) {
  std::string s = std::regex_replace(text, std::regex(R"(\d{4}-\d\d-\d\dT[0-9:.]+Z)"), "TIME");
  s = std::regex_replace(s, std::regex(R"(\d+\.\d+ m?s\b)"), "T");
  return std::regex_replace(s, std::regex(" +"), " ");
}

// A script that sets RANK itself is not torchrun: the report says where the ranks came from.
TEST(Job, RanksFromAPlainScriptAreNotSaidToBeTorchrun) {
  Sandbox box;
  const Job job = launch(box, {"alloc:1M", "alloc:2M"}, false);
  ASSERT_EQ(job.run.exit_code, 0) << job.run.err;
  RunResult r = run_tool({"report", job.root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "gpumemprof report: " + job.root + " (2 processes ranked by RANK, world size 2)\n"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "torchrun")) << r.out;
  RunResult j = run_tool({"report", job.root, "--json"});
  EXPECT_EQ(nlohmann::json::parse(j.out)["processes"][0]["launcher"], "env") << j.out;
}

TEST(Job, TwoRanksGetRankNamedDirectoriesAndAJobReport) {
  Sandbox box;
  const Job job = launch(box, {"alloc:2M alloc:1M free_last", "alloc:3M"});
  ASSERT_EQ(job.run.exit_code, 0) << job.run.err;
  ASSERT_EQ(job.dirs.size(), 2u) << job.run.err;
  const std::string prog = Paths::bin("prog_ops");
  // The closing summary names the ranks and points at the job view, not at each run.
  EXPECT_TRUE(contains(job.run.err, "gpumemprof: 2 profiled processes under " + job.root + "\n  rank 0 of 2: " + prog +
                                        " (pid " + job.pids[0] + "): exited 0\n    device 0: peak allocated 3.00 MiB"))
      << job.run.err;
  EXPECT_TRUE(contains(job.run.err, "  rank 1 of 2: " + prog + " (pid " + job.pids[1] + "): exited 0\n")) << job.run.err;
  EXPECT_FALSE(contains(job.run.err, " report " + job.dirs[0])) << job.run.err;
  const std::string tool = std::filesystem::canonical(Paths::tool());
  EXPECT_TRUE(contains(job.run.err, "  next: " + tool + " report " + job.root + "\n        " + tool + " html " +
                                        job.root + " -o " + job.root + ".html\n  the command ")) << job.run.err;

  RunResult r = run_tool({"report", job.root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string host = host_name();
  EXPECT_EQ(masked(r.out),
            "gpumemprof report: " + job.root + " (job job42, 2 processes started by torchrun, world size 2)\n"
            " the job started TIME (its first process's start); times are since then\n"
            " rank host pid device allocated at reserved at OOMs alerts lost\n"
            " peak peak events\n"
            " 0 " + host + " " + job.pids[0] + " 0 3.00 MiB T 3.00 MiB T 0 0 0\n"
            " 1 " + host + " " + job.pids[1] + " 0 3.00 MiB T 3.00 MiB T 0 0 0\n"
            "spread across the job:\n"
            " allocated peak: highest rank 0 (device 0) 3.00 MiB, lowest rank 0 (device 0) 3.00 MiB, +0 B (+0.0%)\n"
            " reserved peak: highest rank 0 (device 0) 3.00 MiB, lowest rank 0 (device 0) 3.00 MiB, +0 B (+0.0%)\n"
            "out of memory: no process ran out\n"
            "each process's own report:\n"
            " rank 0 gpumemprof report " + job.dirs[0] + "\n"
            " rank 1 gpumemprof report " + job.dirs[1] + "\n");

  RunResult j = run_tool({"report", job.root, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["job"]["processes"], 2);
  EXPECT_EQ(doc["job"]["opened"], 2);
  EXPECT_EQ(doc["failed_first"], nullptr);
  for (int rank : {0, 1}) {
    const auto& p = doc["processes"][rank];
    EXPECT_EQ(p["rank"], rank);
    EXPECT_EQ(p["local_rank"], rank);
    EXPECT_EQ(p["world_size"], 2);
    EXPECT_EQ(p["launcher"], "torchrun");
    EXPECT_EQ(p["job_id"], "job42");
    EXPECT_EQ(p["host"], host);
    EXPECT_EQ(std::to_string(p["pid"].get<uint64_t>()), job.pids[rank]);
    EXPECT_EQ(p["report"], "gpumemprof report " + job.dirs[rank]);
    EXPECT_EQ(p["devices"][0]["allocated_peak"]["bytes"], 3 * MiB);
    EXPECT_EQ(p["devices"][0]["reserved_peak"]["bytes"], 3 * MiB);
    EXPECT_EQ(p["oom"]["failures"], 0);
    EXPECT_EQ(p["events"]["lost"], 0);
  }
  EXPECT_EQ(doc["processes"][0]["events"]["recorded"], 4);  // the device's info record, then the ops
  EXPECT_EQ(doc["processes"][1]["events"]["recorded"], 2);
  ASSERT_EQ(doc["spread"].size(), 2u);
  EXPECT_EQ(doc["spread"][0]["figure"], "allocated_peak");
  EXPECT_EQ(doc["spread"][0]["difference_bytes"], 0);
  EXPECT_EQ(doc["spread"][0]["difference_percent"], 0.0);

  // A run directory of the job given directly keeps the single run's report.
  RunResult one = run_tool({"report", job.dirs[1]});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_TRUE(one.out.starts_with("gpumemprof report: " + job.dirs[1])) << one.out;
  EXPECT_FALSE(contains(one.out, "spread across the job")) << one.out;
}

// Four ranks with different peaks; rank 3 runs out of memory at once, rank 1 half a second later.
class FourRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    job_ = launch(box_, {"alloc:4M sleep:500", "alloc:6M sleep:500 expect_fail:64G", "alloc:8M sleep:500",
                         "alloc:5M expect_fail:64G sleep:500"});
    ASSERT_EQ(job_.run.exit_code, 0) << job_.run.err;
    ASSERT_EQ(job_.dirs.size(), 4u) << job_.run.err;
  }
  Sandbox box_;
  Job job_;
};

TEST_F(FourRanks, TheReportNamesTheSpreadAndTheRankThatFailedFirst) {
  RunResult r = run_tool({"report", job_.root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string host = host_name();
  auto row = [&](int rank, const std::string& peak, int ooms) {
    return " " + std::to_string(rank) + " " + host + " " + job_.pids[rank] + " 0 " + peak + " T " + peak + " T " +
           std::to_string(ooms) + " 0 0\n";
  };
  std::string reports;
  for (int rank = 0; rank < 4; ++rank) {
    reports += " rank " + std::to_string(rank) + " gpumemprof report " + job_.dirs[rank] + "\n";
  }
  EXPECT_EQ(masked(r.out),
            "gpumemprof report: " + job_.root + " (job job42, 4 processes started by torchrun, world size 4)\n"
            " the job started TIME (its first process's start); times are since then\n"
            " rank host pid device allocated at reserved at OOMs alerts lost\n"
            " peak peak events\n" +
                row(0, "4.00 MiB", 0) + row(1, "6.00 MiB", 1) + row(2, "8.00 MiB", 0) + row(3, "5.00 MiB", 1) +
                "spread across the job:\n"
                " allocated peak: highest rank 2 (device 0) 8.00 MiB, lowest rank 0 (device 0) 4.00 MiB, +4.00 MiB "
                "(+100.0%)\n"
                " reserved peak: highest rank 2 (device 0) 8.00 MiB, lowest rank 0 (device 0) 4.00 MiB, +4.00 MiB "
                "(+100.0%)\n"
                "rank 3 ran out of memory first, at T: cuMemAlloc_v2 of 64.00 GiB on device 0\n"
                " then rank 1, T later\n"
                "each process's own report:\n" +
                reports);

  RunResult j = run_tool({"report", job_.root, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  const auto& spread = doc["spread"][0];
  EXPECT_EQ(spread["figure"], "allocated_peak");
  EXPECT_EQ(spread["rows"], 4);
  EXPECT_EQ(spread["highest"]["label"], "rank 2");
  EXPECT_EQ(spread["highest"]["bytes"], 8 * MiB);
  EXPECT_EQ(spread["lowest"]["label"], "rank 0");
  EXPECT_EQ(spread["lowest"]["bytes"], 4 * MiB);
  EXPECT_EQ(spread["difference_bytes"], 4 * MiB);
  EXPECT_EQ(spread["difference_percent"], 100.0);
  const auto& first = doc["failed_first"];
  EXPECT_EQ(first["label"], "rank 3");
  EXPECT_EQ(first["process"], 3);
  ASSERT_EQ(first["later"].size(), 1u);
  EXPECT_EQ(first["later"][0]["label"], "rank 1");
  EXPECT_GE(first["later"][0]["after_ns"].get<uint64_t>(), 400'000'000u);  // rank 1 slept 500 ms first
  const auto& oom = doc["processes"][3]["oom"];
  EXPECT_EQ(oom["failures"], 1);
  EXPECT_EQ(oom["bundles_written"], 1);
  EXPECT_EQ(oom["first"]["size"], 64 * 1024 * MiB);
  EXPECT_EQ(oom["first"]["api"], "cuMemAlloc_v2");
  EXPECT_EQ(doc["processes"][0]["oom"]["first"], nullptr);
}

TEST_F(FourRanks, TheHtmlPageHasARowPerRank) {
  const std::string out = box_.dir() + "/job.html";
  RunResult r = run_tool({"html", job_.root, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = slurp(out);
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_TRUE(contains(page, "<p class=\"note bad\">rank 3 ran out of memory first, at ")) << page;
  EXPECT_TRUE(contains(page, "<li>then rank 1, ")) << page;
  EXPECT_TRUE(contains(page, "<li>allocated peak: highest rank 2 (device 0) 8.00 MiB, lowest rank 0 (device 0) "
                             "4.00 MiB, +4.00 MiB (+100.0%)</li>"))
      << page;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(contains(page, "<code>gpumemprof report " + job_.dirs[rank] + "</code>")) << page;
  }
  const std::string open = "<script type=\"application/json\" id=\"gmp-data\">";
  const size_t start = page.find(open);
  ASSERT_NE(start, std::string::npos);
  const auto data = nlohmann::json::parse(page.substr(start + open.size(), page.find("</script>", start) -
                                                                               start - open.size()));
  EXPECT_EQ(data["schema"], "gpumemprof-html-job/1");
  ASSERT_EQ(data["job"]["processes"].size(), 4u);
  EXPECT_EQ(data["job"]["processes"][2]["devices"][0]["allocated_peak"]["bytes"], 8 * MiB);
  EXPECT_EQ(data["job"]["failed_first"]["label"], "rank 3");
  // A timeline strip per rank on the job's clock, and each rank's own page beside the job's, linked.
  size_t strips = 0;
  for (size_t at = page.find("class=\"rank-timeline\""); at != std::string::npos;
       at = page.find("class=\"rank-timeline\"", at + 1)) {
    ++strips;
  }
  EXPECT_EQ(strips, 4u) << page;
  EXPECT_TRUE(contains(r.err, "and 4 processes' pages beside it")) << r.err;
  const uint64_t peaks[] = {4 * MiB, 6 * MiB, 8 * MiB, 5 * MiB};
  for (int rank = 0; rank < 4; ++rank) {
    const std::string name = "job.rank" + std::to_string(rank) + ".html";
    EXPECT_TRUE(contains(page, "<a class=\"rank-page\" href=\"" + name + "\">")) << page;
    const std::string own = slurp(box_.dir() + "/" + name);
    const size_t at = own.find(open);
    ASSERT_NE(at, std::string::npos) << name;
    const auto rank_data =
        nlohmann::json::parse(own.substr(at + open.size(), own.find("</script>", at) - at - open.size()));
    EXPECT_EQ(rank_data["analysis"]["devices"][0]["allocated_peak"]["bytes"], peaks[rank]) << name;
  }
  // To stdout there is no place for the ranks' pages: their commands instead.
  RunResult piped = run_tool({"html", job_.root, "-o", "-"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_TRUE(contains(piped.out, "<code>gpumemprof html " + job_.dirs[0] + " -o rank-0.html</code>")) << piped.out;
  EXPECT_FALSE(contains(piped.out, "rank-page"));
}

// At 80 columns the job view fits: prose wrapped, the table's columns a space apart.
TEST_F(FourRanks, TheReportFitsEightyColumns) {
  ScopedColumns eighty("80");
  RunResult r = run_tool({"report", job_.root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("gpumemprof report " + job_.root) != std::string::npos) continue;  // a command, whole
    size_t columns = 0;
    for (unsigned char c : line) columns += (c & 0xC0) != 0x80;
    EXPECT_LE(columns, 80u) << line;
  }
  EXPECT_TRUE(contains(r.out, "\n  rank host ")) << r.out;
}

// `oom ROOT` explains the rank that ran out first and names the others' own commands.
TEST_F(FourRanks, OomOfTheRootExplainsTheRankThatRanOutFirst) {
  RunResult r = run_tool({"oom", job_.root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("gpumemprof oom: job " + job_.root + " (4 processes)\n  rank 3 ran out of memory first, at "))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  the others' own explanations:\n    rank 1  gpumemprof oom " + job_.dirs[1] + "\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  explaining rank 3:\n\ngpumemprof oom: run directory " + job_.dirs[3] + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "cuMemAlloc_v2 asked for 64.00 GiB")) << r.out;
  RunResult j = run_tool({"oom", job_.root, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["job"]["explained"], "rank 3");
  EXPECT_EQ(doc["job"]["others"][0]["path"], job_.dirs[1]);
  EXPECT_EQ(doc["bundles"].size(), 1u);
}

// `diff ROOT_A ROOT_B`: rank against rank, with each pair's own diff, and the growth limit per rank.
TEST_F(FourRanks, DiffOfTwoJobsComparesRankByRank) {
  Sandbox other;
  const Job b = launch(other, {"alloc:4M", "alloc:12M", "alloc:8M", "alloc:5M"});
  ASSERT_EQ(b.run.exit_code, 0) << b.run.err;
  RunResult r = run_tool({"diff", job_.root, b.root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("gpumemprof diff: job " + job_.root + " (4 processes) -> job " + b.root +
                                " (4 processes)\n  rank 0, device 0: allocated peak 4.00 MiB -> 4.00 MiB (no change);"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  rank 1, device 0: allocated peak 6.00 MiB -> 12.00 MiB (+6.00 MiB, +100.0%);")) << r.out;
  EXPECT_TRUE(contains(r.out, "  rank 1    gpumemprof diff " + job_.dirs[1] + " " + b.dirs[1] + "\n")) << r.out;
  RunResult gate = run_tool({"diff", job_.root, b.root, "--fail-if-peak-grows", "50"});
  EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
  EXPECT_TRUE(contains(gate.out, "gpumemprof diff: rank 1, device 0: peak allocated 12.00 MiB against the baseline's "
                                 "6.00 MiB (+100.00%), over --fail-if-peak-grows 50%\n"))
      << gate.out;
  RunResult j = run_tool({"diff", job_.root, b.root, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["rows"][1]["allocated_peak"]["delta"], 6 * MiB);
  EXPECT_EQ(doc["limits"], nullptr);
  RunResult mixed = run_tool({"diff", job_.root, b.dirs[0]});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_EQ(mixed.err, "gpumemprof diff: " + job_.root + " is a job and " + b.dirs[0] +
                           " one run directory; give two jobs or two run directories\n");
}

TEST_F(FourRanks, APerfettoExportHasOneTrackGroupPerRank) {
  const std::string out = box_.dir() + "/job.json";
  RunResult r = run_tool({"export", job_.root, "--format", "perfetto", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpumemprof export: wrote " + out + " (perfetto, 4 processes, 14 trace events)\n");
  const auto trace = nlohmann::json::parse(slurp(out));
  std::map<uint64_t, std::string> names;
  std::map<uint64_t, std::vector<uint64_t>> allocated;  // pid -> the GPU 0 counter's values
  std::map<uint64_t, int> ooms;
  for (const auto& ev : trace["traceEvents"]) {
    const uint64_t pid = ev["pid"];
    if (ev["ph"] == "M" && ev["name"] == "process_name") names[pid] = ev["args"]["name"];
    if (ev["ph"] == "C" && ev["name"] == "GPU 0 memory") allocated[pid].push_back(ev["args"]["allocated"]);
    if (ev["ph"] == "i" && ev["cat"] == "oom" && ev["args"].contains("error")) ++ooms[pid];
  }
  const std::string host = host_name();
  const uint64_t peaks[4] = {4 * MiB, 6 * MiB, 8 * MiB, 5 * MiB};
  ASSERT_EQ(names.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const uint64_t pid = std::stoull(job_.pids[rank]);
    EXPECT_EQ(names[pid], "rank " + std::to_string(rank) + " (" + host + " pid " + job_.pids[rank] + ")");
    EXPECT_EQ(allocated[pid], (std::vector<uint64_t>{0, peaks[rank]})) << rank;
    EXPECT_EQ(ooms[pid], rank == 1 || rank == 3 ? 1 : 0) << rank;
    EXPECT_EQ(trace["otherData"]["processes"][rank]["rank"], rank);
    EXPECT_EQ(trace["otherData"]["processes"][rank]["run_directory"], job_.dirs[rank]);
  }
}

TEST_F(FourRanks, OtherFormatsAndWindowsOfAJobAreRefusedInOneLine) {
  RunResult csv = run_tool({"export", job_.root, "--format", "csv", "-o", box_.dir() + "/x.csv"});
  EXPECT_EQ(csv.exit_code, 2);
  EXPECT_EQ(csv.err, "gpumemprof export: " + job_.root +
                         " holds the run directories of a job, which exports as --format perfetto only; csv takes one "
                         "run directory\n");
  RunResult since = run_tool({"report", job_.root, "--since", "1s"});
  EXPECT_EQ(since.exit_code, 2);
  EXPECT_EQ(since.err, "gpumemprof report: --since and --until apply to one run directory, and " + job_.root +
                           " holds a job; give one of its run directories (gpumemprof report " + job_.root +
                           " lists them)\n");
}

}  // namespace
}  // namespace gmp::test
