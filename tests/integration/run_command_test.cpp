// `gpumemprof run`: the launcher around a profiled command.
#include <dirent.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "harness.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

std::vector<std::string> dirs_under(const std::string& root) {
  std::vector<std::string> out;
  const std::string cmd = "ls -1 " + root + " 2>/dev/null";
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char line[512];
    while (fgets(line, sizeof line, p)) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      out.push_back(root + "/" + s);
    }
    pclose(p);
  }
  return out;
}

TEST(RunCommand, KeepsTheExitStatusAndPrintsTheNextCommand) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {Paths::bin("prog_lifecycle"), "exit-thread"}), tool_env());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto dirs = dirs_under(root);
  ASSERT_EQ(dirs.size(), 1u);
  const std::string pid = dirs[0].substr(dirs[0].rfind('.') + 1);
  // How it ended first; then the commands to paste: this build's binary, which is not on PATH.
  EXPECT_NE(r.err.find("gpumemprof: 1 profiled process under " + root + "\n  " + Paths::bin("prog_lifecycle") +
                       " (pid " + pid + "): exited 3\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("device 0: peak allocated 3.00 MiB, peak reserved 3.00 MiB"), std::string::npos) << r.err;
  const std::string tool = std::filesystem::canonical(Paths::tool());
  EXPECT_TRUE(r.err.ends_with("    next: " + tool + " report " + dirs[0] + "\n          " + tool + " html " +
                              dirs[0] + " -o " + dirs[0] + ".html\n")) << r.err;
  EXPECT_EQ(read_json_file(dirs[0] + "/summary.json")["devices"][0]["alloc_count"], 2);

  // Found on PATH, the command is its name; an OOM adds the oom command.
  const std::string bin = tool.substr(0, tool.rfind('/'));
  r = box.run(run_args(box.dir() + "/oom", {Paths::bin("prog_ops"), "alloc:2G"}),
              tool_env({{"PATH", bin + ":/usr/bin:/bin"}, {"FAKE_CUDA_CAPACITY", "1G"}}));
  const std::string ops_dir = dirs_under(box.dir() + "/oom").at(0);
  EXPECT_TRUE(r.err.ends_with("    next: gpumemprof report " + ops_dir + "\n          gpumemprof oom " + ops_dir +
                              "\n          gpumemprof html " + ops_dir + " -o " + ops_dir + ".html\n")) << r.err;
}

// Every option value is checked before the command starts: status 2, one line naming the flag and
// what it accepts, and the command never ran.
TEST(RunCommand, ABadOptionValueIsRefusedBeforeTheCommandRuns) {
  Sandbox box;
  const std::string marker = box.dir() + "/ran";
  const std::vector<std::pair<std::vector<std::string>, std::string>> rows = {
      {{"--warn-percent", "abc"}, "invalid --warn-percent 'abc': expected a number in (0, 100]"},
      {{"--warn-percent", "150"}, "invalid --warn-percent '150': expected a number in (0, 100]"},
      {{"--critical-percent", "50"},
       "invalid --critical-percent '50': expected a number in (0, 100] no lower than the warning threshold 80"},
      {{"--warn-percent=90", "--critical-percent", "85"},
       "invalid --critical-percent '85': expected a number in (0, 100] no lower than the warning threshold 90"},
      {{"--warn-percent", "97.5"},
       "invalid --warn-percent '97.5': expected a number in (0, 100] no higher than the critical threshold 95"},
      {{"--sample-ms", "1.5"}, "invalid --sample-ms '1.5': expected an integer from 0 (off) to 3600000"},
      {{"--log-level", "loud"}, "invalid --log-level 'loud': expected one of trace, debug, info, warn, error, "
                                "critical, off"},
      {{"--oom-dir", " "}, "invalid --oom-dir ' ': expected a non-empty directory path"},
      {{"--metrics-dir", "\n"}, "invalid --metrics-dir '\\n': expected a non-empty directory path"},
      {{"--max-peak", "lots"}, "--max-peak 'lots' is not a size or a GPU name; accepted: a byte count with an "
                               "optional unit K, M, G, KiB, MiB or GiB (e.g. 1M, 512KiB), or a GPU name: L4, A10, "
                               "A100-40GB, A100-80GB, H100-80GB, H200, RTX-4090"},
      {{"--device-limit", "T4"}, "invalid --device-limit 'T4': expected a size (24GiB), a GPU name (L4, A10, "
                                 "A100-40GB, A100-80GB, H100-80GB, H200, RTX-4090) or per device (0:24GiB,1:L4)"},
  };
  for (const auto& [options, message] : rows) {
    std::vector<std::string> args = {Paths::tool(), "run"};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "/bin/touch", marker});
    RunResult r = box.run(args, tool_env());
    EXPECT_EQ(r.exit_code, 2) << options[0];
    EXPECT_EQ(r.err, "gpumemprof run: " + message + "\n");
  }
  // The environment's warning threshold is the one in force when only the critical one is given.
  RunResult r = box.run({Paths::tool(), "run", "--critical-percent", "50", "--", "/bin/touch", marker},
                        tool_env({{"GPUMEMPROF_WARN_PERCENT", "40"}}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  EXPECT_EQ(stat(marker.c_str(), &st), 0) << "a valid pair was refused";
}

// -o naming a file that is no directory would profile nothing: refused before the command runs.
TEST(RunCommand, AnOutputThatIsNoDirectoryIsRefusedBeforeTheCommandRuns) {
  Sandbox box;
  const std::string file = box.dir() + "/a-file", marker = box.dir() + "/ran";
  std::ofstream(file) << "not a directory\n";
  RunResult r = box.run({Paths::tool(), "run", "-o", file, "--", "/bin/touch", marker}, tool_env());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "gpumemprof run: -o " + file + " is not a directory; give a directory (created if missing)\n");
  struct stat st {};
  EXPECT_NE(stat(marker.c_str(), &st), 0) << "the command ran";
}

// A command that never allocates leaves nothing behind: the directory the run made is removed,
// and one it did not make is kept.
TEST(RunCommand, ARunThatProfiledNothingLeavesNoEmptyDirectory) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {"/bin/true"}), tool_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "\ngpumemprof: 0 profiled processes under " + root + "\n  (no process allocated GPU memory)\n" +
                       "  the empty directory " + root + " is removed\n");
  struct stat st {};
  EXPECT_NE(stat(root.c_str(), &st), 0);
  ASSERT_EQ(mkdir(root.c_str(), 0700), 0);
  r = box.run(run_args(root, {"/bin/true"}), tool_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("is removed"), std::string::npos) << r.err;
  EXPECT_EQ(stat(root.c_str(), &st), 0);
}

TEST(RunCommand, EveryCudaProcessOfAScriptGetsItsOwnDirectory) {
  Sandbox box;
  const std::string script = box.dir() + "/two.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho \"$LD_PRELOAD\" > " << box.dir() << "/preload.txt\n"
      << Paths::bin("prog_ops") << " alloc:1M >/dev/null\n"
      << Paths::bin("prog_ops") << " alloc:2M >/dev/null\n"
      << Paths::bin("prog_lifecycle") << " no-cuda\n";
  }
  chmod(script.c_str(), 0755);
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {script}), tool_env({{"LD_PRELOAD", "/lib/x86_64-linux-gnu/libm.so.6"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dirs_under(root).size(), 2u);  // the process that never used CUDA left nothing
  EXPECT_NE(r.err.find("2 profiled processes"), std::string::npos) << r.err;
  std::ifstream p(box.dir() + "/preload.txt");
  std::string preload;
  std::getline(p, preload);
  EXPECT_EQ(preload, Paths::shim() + ":/lib/x86_64-linux-gnu/libm.so.6");  // prepended, not replaced
}

TEST(RunCommand, ACommandKilledByASignalTakesTheLauncherWithIt) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {Paths::bin("prog_lifecycle"), "sigterm"}), tool_env());
  EXPECT_EQ(r.term_signal, SIGTERM) << r.err;
  const std::string dir = dirs_under(root).at(0);
  EXPECT_NE(r.err.find("  " + Paths::bin("prog_lifecycle") + " (pid " + dir.substr(dir.rfind('.') + 1) +
                       "): killed by signal 15 (SIGTERM)\n"), std::string::npos) << r.err;
}

// A root that earlier runs left behind (a CI workspace that is kept): a run summarises and checks
// only the processes it started, and says what it left out.
TEST(RunCommand, EarlierRunsInTheRootAreNeitherCountedNorChecked) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  ASSERT_EQ(box.run(run_args(root, {Paths::bin("prog_ops"), "alloc:23M"}), tool_env()).exit_code, 0);
  RunResult r = box.run({Paths::tool(), "run", "-o", root, "--max-peak", "10MiB", "--", Paths::bin("prog_ops"),
                         "alloc:1M"},
                        tool_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("gpumemprof: 1 profiled process under " + root + "\n  (" + root +
                       " already held 1 run directory of earlier runs: not counted or checked here)\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("gpumemprof run: passed on this run's processes under " + root + " (1 process"),
            std::string::npos)
      << r.err;
  // The new run's own peak still breaks the limit.
  r = box.run({Paths::tool(), "run", "-o", root, "--max-peak", "10MiB", "--", Paths::bin("prog_ops"), "alloc:12M"},
              tool_env());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("already held 2 run directories"), std::string::npos) << r.err;
  EXPECT_EQ(dirs_under(root).size(), 3u);
}

// The same root read afterwards: `report ROOT` and `check ROOT` read the latest `gpumemprof run`'s
// processes as the job (their manifests share its invocation) and say what else ROOT holds.
TEST(RunCommand, ReportAndCheckOfAReusedRootReadTheLatestRun) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  for (const char* size : {"alloc:23M", "alloc:5M", "alloc:1M"}) {
    ASSERT_EQ(box.run(run_args(root, {Paths::bin("prog_ops"), size}), tool_env()).exit_code, 0);
  }
  ASSERT_EQ(dirs_under(root).size(), 3u);
  RunResult check = run_tool({"check", root, "--max-peak", "10MiB"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.err.find("gpumemprof check: " + root +
                           " also holds 2 run directories of 2 earlier jobs, not read here: this is the latest, 1 "
                           "process of one `gpumemprof run` (prog_ops) started "),
            std::string::npos)
      << check.err;
  RunResult report = run_tool({"report", root, "--json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto doc = nlohmann::json::parse(report.out);
  EXPECT_EQ(doc["job"]["processes"], 1);
  EXPECT_EQ(doc["processes"][0]["devices"][0]["allocated_peak"]["bytes"], 1u << 20) << report.out;
  EXPECT_NE(doc["job"]["left_out"].get<std::string>().find("2 earlier jobs"), std::string::npos);
  // The other commands say it on stderr.
  RunResult page = run_tool({"html", root, "-o", box.dir() + "/job.html"});
  EXPECT_EQ(page.exit_code, 0) << page.err;
  EXPECT_NE(page.err.find("gpumemprof html: " + root + " also holds 2 run directories of 2 earlier jobs"),
            std::string::npos)
      << page.err;
  // Each run directory names the invocation that made it.
  std::set<std::string> invocations;
  for (const std::string& dir : dirs_under(root)) {
    std::ifstream f(dir + "/manifest.json");
    invocations.insert(nlohmann::json::parse(f)["invocation"].get<std::string>());
  }
  EXPECT_EQ(invocations.size(), 3u);
}

// Runs of unrelated jobs found in different directories (a search of /tmp) are not merged into one
// job: the tools list what they found and ask for one.
TEST(RunCommand, UnrelatedRunsInDifferentDirectoriesAreListedNotMerged) {
  Sandbox box;
  const std::string top = box.dir() + "/tmp";
  ASSERT_EQ(box.run(run_args(top + "/a", {Paths::bin("prog_ops"), "alloc:1M"}), tool_env()).exit_code, 0);
  ASSERT_EQ(box.run(run_args(top + "/b/c", {Paths::bin("prog_ops"), "alloc:100M"}), tool_env()).exit_code, 0);
  for (const char* command : {"report", "check", "html"}) {
    std::vector<std::string> args = {command, top};
    if (std::string(command) == "html") args.insert(args.end(), {"-o", box.dir() + "/page.html"});
    if (std::string(command) == "check") args.insert(args.end(), {"--max-peak", "1GiB"});
    RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.out << r.err;
    EXPECT_EQ(r.out, "") << command;
    EXPECT_NE(r.err.find("gpumemprof " + std::string(command) + ": " + top +
                         " holds the runs of 2 different jobs; give the directory of the one to read:\n  " + top +
                         "/a  1 process of one `gpumemprof run` (prog_ops) started "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("\n  " + top + "/b/c  1 process of one `gpumemprof run` (prog_ops) started "),
              std::string::npos)
        << r.err;
  }
  RunResult one = run_tool({"report", top + "/b/c"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
}

// The pid in an ELF core file's NT_PRPSINFO note (x86-64 elf_prpsinfo: pr_pid at byte 24); 0 when
// the file is no core or has no such note.
int core_pid(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string core((std::istreambuf_iterator<char>(in)), {});
  if (core.size() < sizeof(Elf64_Ehdr) || core.compare(0, 4, ELFMAG) != 0) return 0;
  Elf64_Ehdr eh;
  std::memcpy(&eh, core.data(), sizeof eh);
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    const size_t at = eh.e_phoff + static_cast<size_t>(i) * eh.e_phentsize;
    if (at + sizeof ph > core.size()) return 0;
    std::memcpy(&ph, core.data() + at, sizeof ph);
    if (ph.p_type != PT_NOTE || ph.p_offset + ph.p_filesz > core.size()) continue;
    for (size_t n = ph.p_offset; n + sizeof(Elf64_Nhdr) <= ph.p_offset + ph.p_filesz;) {
      Elf64_Nhdr nh;
      std::memcpy(&nh, core.data() + n, sizeof nh);
      const size_t desc = n + sizeof nh + ((nh.n_namesz + 3) & ~3u);
      if (nh.n_type == NT_PRPSINFO && desc + 28 <= core.size()) {
        int pid;
        std::memcpy(&pid, core.data() + desc + 24, sizeof pid);
        return pid;
      }
      n = desc + ((nh.n_descsz + 3) & ~3u);
    }
  }
  return 0;
}

// A command that dumps core keeps its core: the launcher dies of the same signal without a core of
// its own, which would overwrite the command's ("core" in the same directory).
TEST(RunCommand, TheCommandsCoreDumpIsNotOverwritten) {
  std::ifstream pattern("/proc/sys/kernel/core_pattern");
  std::string p;
  std::getline(pattern, p);
  if (p.empty() || p[0] == '|' || p.find('/') != std::string::npos || p.find('%') != std::string::npos) {
    GTEST_SKIP() << "core_pattern '" << p << "' does not write cores into the working directory";
  }
  Sandbox box;
  const std::string cmd = "cd '" + box.dir() + "' && ulimit -c unlimited && exec '" + Paths::tool() +
                          "' run -o runs -- '" + Paths::bin("prog_ops") + "' alloc:1M abort";
  RunResult r = box.run({"/bin/sh", "-c", cmd}, tool_env());
  EXPECT_EQ(r.term_signal, SIGABRT) << r.err;
  const std::string dir = dirs_under(box.dir() + "/runs").at(0);
  const int program = std::atoi(dir.substr(dir.rfind('.') + 1).c_str());
  std::vector<std::string> cores;
  if (DIR* d = opendir(box.dir().c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind(p, 0) == 0) cores.push_back(box.dir() + "/" + e->d_name);
    }
    closedir(d);
  }
  if (cores.empty()) GTEST_SKIP() << "no core was dumped here (limits of this machine)";
  ASSERT_EQ(cores.size(), 1u);
  EXPECT_EQ(core_pid(cores[0]), program) << cores[0];
}

// A command that is no CUDA process (a shell) says how it ended too; the processes it started, as
// their summaries say.
TEST(RunCommand, TheCommandAndEachProcessSayHowTheyEnded) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  const std::string script = Paths::bin("prog_ops") + " alloc:1M >/dev/null; kill -KILL $$";
  RunResult r = box.run(run_args(root, {"/bin/sh", "-c", script}), tool_env());
  EXPECT_EQ(r.term_signal, SIGKILL) << r.err;
  const std::string dir = dirs_under(root).at(0);
  EXPECT_NE(r.err.find(" profiled process under " + root + "\n  " + Paths::bin("prog_ops") + " (pid " +
                       dir.substr(dir.rfind('.') + 1) + "): exited 0\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(".html\n  the command /bin/sh (pid "), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.ends_with("): killed by signal 9 (SIGKILL)\n")) << r.err;
}

TEST(RunCommand, SignalsArePassedToTheCommand) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  int out = -1;
  pid_t pid = box.spawn(run_args(root, {Paths::bin("prog_lifecycle"), "wait-signal"}), tool_env(), &out);
  ASSERT_EQ(read_line(out, 30000), "ready");
  kill(pid, SIGINT);
  RunResult r = wait_for(pid, out, -1, 30);
  close(out);
  EXPECT_EQ(r.term_signal, SIGINT);
  auto dirs = dirs_under(root);
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(read_json_file(dirs[0] + "/summary.json")["terminated_by_signal"], SIGINT);
}

TEST(RunCommand, OptionsReachTheProfiledProcess) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {Paths::bin("prog_ops"), "alloc:100M"}, {"--warn-percent", "1", "--sample-ms", "0"}),
                        tool_env({{"FAKE_CUDA_CAPACITY", "1G"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto dirs = dirs_under(root);
  ASSERT_EQ(dirs.size(), 1u);
  auto m = read_json_file(dirs[0] + "/manifest.json");
  EXPECT_EQ(m["config"]["warn_percent"], 1.0);
  EXPECT_EQ(m["config"]["sample_ms"], 0);
  EXPECT_EQ(read_json_file(dirs[0] + "/summary.json")["alerts"]["warning"], 1);
  EXPECT_NE(r.err.find("alerts 1"), std::string::npos) << r.err;
}

// RangePush events in the only run directory under `root` (prog_nvtx's all come from NVTX).
int range_pushes(const std::string& root) {
  auto dirs = dirs_under(root);
  EXPECT_EQ(dirs.size(), 1u);
  if (dirs.size() != 1) return -1;
  reader::TraceReader trace;
  EXPECT_TRUE(trace.open(dirs[0] + "/trace.gmpt")) << trace.error();
  int n = 0;
  Event e;
  while (trace.next(e)) n += e.op == Op::RangePush;
  return n;
}

TEST(RunCommand, RecordsNvtxRangesAndChainsTheNvtxToolAlreadySet) {
  Sandbox box;
  // prog_nvtx pushes 9 ranges (the first, opened before any CUDA memory call, is replayed).
  RunResult r = box.run(run_args(box.dir() + "/plain", {Paths::bin("prog_nvtx")}),
                        tool_env({{"NVTX_INJECTION64_PATH", "<unset>"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["returns"][0], 0);  // the shim answered NVTX
  EXPECT_EQ(range_pushes(box.dir() + "/plain"), 9);

  // Another tool named in NVTX_INJECTION64_PATH keeps seeing every call.
  const std::string counts = box.dir() + "/fake_nvtx.json";
  r = box.run(run_args(box.dir() + "/chained", {Paths::bin("prog_nvtx")}),
              tool_env({{"NVTX_INJECTION64_PATH", Paths::bin("libfake_nvtx_tool.so")}, {"FAKE_NVTX_OUT", counts}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["returns"][0], 100);  // the chained tool's answer
  EXPECT_EQ(read_json_file(counts)["push_a"], 4);
  EXPECT_EQ(range_pushes(box.dir() + "/chained"), 9);

  // NVTX_INJECTION64_PATH already naming the shim is not chained to itself.
  r = box.run(run_args(box.dir() + "/self", {Paths::bin("prog_nvtx")}),
              tool_env({{"NVTX_INJECTION64_PATH", Paths::shim()}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["returns"][0], 0);
  EXPECT_EQ(range_pushes(box.dir() + "/self"), 9);
}

// The end-of-run summary counts events as the report does: a process that never flushed (its
// summary.json removed, as after SIGKILL) and one whose trace writes failed (what the collector
// then records in summary.json, written here) are said to be so.
TEST(RunCommand, IncompleteTracesAreSaidAtTheEnd) {
  Sandbox box;
  const std::string root = box.dir() + "/runs", script = box.dir() + "/two.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\n"
      << Paths::bin("prog_ops") << " alloc:1M >/dev/null\n"
      << "first=$(ls -d " << root << "/*)\nrm \"$first/summary.json\"\n"
      << Paths::bin("prog_ops") << " alloc:2M >/dev/null\n"
      << "for d in " << root << "/*; do [ \"$d\" = \"$first\" ] || sed -i "
      << "'s/\"unwritten\": 0/\"trace_error\": \"No space left on device\", \"unwritten\": 5/' \"$d/summary.json\"; done\n"
      << "echo \"$first\" > " << box.dir() + "/first.txt\n";
  }
  chmod(script.c_str(), 0755);
  ScopedColumns eighty("80");  // the notes are wrapped for it
  RunResult r = box.run(run_args(root, {script}), tool_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(box.dir()) == std::string::npos) {  // paths are never cut
      EXPECT_LE(line.size(), 80u) << line;
    }
  }
  std::string first;
  std::getline(std::ifstream(box.dir() + "/first.txt"), first);
  auto dirs = dirs_under(root);
  ASSERT_EQ(dirs.size(), 2u);
  const std::string second = dirs[0] == first ? dirs[1] : dirs[0];
  reader::TraceReader t1, t2;
  ASSERT_TRUE(t1.open(first + "/trace.gmpt"));
  ASSERT_TRUE(t2.open(second + "/trace.gmpt"));
  const std::string n1 = std::to_string(t1.records_in_file()), n2 = std::to_string(t2.records_in_file());
  const nlohmann::json s2 = read_json_file(second + "/summary.json");
  ASSERT_EQ(s2["events"]["unwritten"], 5);
  const std::string recorded = std::to_string(s2["events"]["recorded"].get<uint64_t>());
  EXPECT_NE(flat(r.err).find(flat("    events: " + n1 + " in trace.gmpt; lost and unwritten unknown (no final flush)\n"
                                 "    note: the process ended without its final flush (no summary.json): events recorded "
                                 "after the last trace write are missing and their number is unknown; figures are rebuilt "
                                 "from the " + n1 + " events in trace.gmpt\n")),
            std::string::npos)
      << r.err;
  EXPECT_NE(flat(r.err).find(flat("    events: " + recorded + " recorded, 0 lost, 5 unwritten, " + n2 +
                                 " in trace.gmpt, 0 producer waits\n"
                                 "    note: trace incomplete: 5 of " + recorded + " events were not written to "
                                 "trace.gmpt (No space left on device)\n")),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace gmp::test
