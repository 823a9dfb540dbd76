#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace gmp::test {
namespace {

std::vector<std::string> build_env(const std::map<std::string, std::string>& vars) {
  std::map<std::string, std::string> all;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    if (key.rfind("GPUMEMPROF_", 0) == 0 || key.rfind("FAKE_CUDA_", 0) == 0) continue;  // tests start clean
    all[key] = kv.substr(eq + 1);
  }
  for (auto& [k, v] : vars) {
    if (v == "<unset>") all.erase(k);
    else all[k] = v;
  }
  std::vector<std::string> out;
  for (auto& [k, v] : all) out.push_back(k + "=" + v);
  return out;
}

std::string slurp_fd(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

// `as_user`: the uid (and gid) the program runs as, without supplementary groups; -1 for ours.
pid_t start(const std::vector<std::string>& argv, const std::vector<std::string>& env, int out_fd, int err_fd,
            uid_t as_user = static_cast<uid_t>(-1)) {
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (as_user != static_cast<uid_t>(-1) &&
        (setgroups(0, nullptr) != 0 || setgid(as_user) != 0 || setuid(as_user) != 0)) {
      _exit(126);
    }
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    for (auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    e.push_back(nullptr);
    execve(a[0], a.data(), e.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

Sandbox::Sandbox() {
  char tmpl[] = "/tmp/gmp-it-XXXXXX";
  dir_ = mkdtemp(tmpl);
}

Sandbox::~Sandbox() {
  if (!::testing::Test::HasFailure()) std::system(("rm -rf " + dir_).c_str());
}

std::map<std::string, std::string> Sandbox::env(const std::map<std::string, std::string>& extra) const {
  std::map<std::string, std::string> e = {
      {"LD_PRELOAD", Paths::shim()},
      {"LD_LIBRARY_PATH", Paths::fake_dir()},
      {"GPUMEMPROF_OUTPUT", dir_ + "/run.%p"},
      // Not the user's own registry (/tmp/gpumemprof-UID): the tests' processes are no one's to see.
      {"GPUMEMPROF_LIVE_REGISTRY", dir_ + "/registry"},
      {"FAKE_CUDA_CAPACITY", "16G"},
  };
  for (auto& [k, v] : extra) e[k] = v;
  return e;
}

RunResult Sandbox::run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra,
                       int timeout_s, const std::string& stdout_path) const {
  return run_as(static_cast<uid_t>(-1), argv, extra, timeout_s, stdout_path);
}

RunResult Sandbox::run_as(uid_t user, const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& extra, int timeout_s,
                          const std::string& stdout_path) const {
  const std::string out = stdout_path.empty() ? dir_ + "/.stdout" : stdout_path, err = dir_ + "/.stderr";
  int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = start(argv, build_env(env(extra)), out_fd, err_fd, user);
  close(out_fd);
  close(err_fd);
  RunResult r = wait_for(pid, -1, -1, timeout_s);
  std::ifstream e(err);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  unlink(err.c_str());
  if (stdout_path.empty()) {
    std::ifstream o(out);
    r.out.assign(std::istreambuf_iterator<char>(o), {});
    unlink(out.c_str());
  }
  return r;
}

pid_t Sandbox::spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra,
                     int* stdout_fd) const {
  int p[2];
  if (pipe(p) != 0) return -1;
  const std::string err = dir_ + "/.stderr";
  int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = start(argv, build_env(env(extra)), p[1], err_fd);
  close(p[1]);
  close(err_fd);
  *stdout_fd = p[0];
  return pid;
}

RunResult wait_for(pid_t pid, int stdout_fd, int stderr_fd, int timeout_s) {
  RunResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "process " << pid << " timed out after " << timeout_s << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  if (stdout_fd >= 0) r.out = slurp_fd(stdout_fd);
  if (stderr_fd >= 0) r.err = slurp_fd(stderr_fd);
  return r;
}

std::string read_line(int fd, int timeout_ms) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    char c;
    if (read(fd, &c, 1) != 1) break;
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

std::vector<std::string> Sandbox::run_dirs() const {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir_.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("run.", 0) == 0) out.push_back(dir_ + "/" + name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Sandbox::only_run_dir() const {
  auto dirs = run_dirs();
  EXPECT_EQ(dirs.size(), 1u) << "run directories under " << dir_;
  return dirs.empty() ? std::string() : dirs.front();
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "missing " << path;
    return nullptr;
  }
  return nlohmann::json::parse(in, nullptr, false);
}

std::string flat(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (!space) out += c;
    else if (!out.empty() && out.back() != ' ') out += ' ';
  }
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

OtherUser other_user() {
  const passwd* pw = getpwnam("nobody");
  return pw != nullptr ? OtherUser{pw->pw_uid, pw->pw_gid} : OtherUser{65534, 65534};
}

int as_other_user(const std::function<int()>& fn) {
  const OtherUser who = other_user();
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(who.gid) != 0 || setuid(who.uid) != 0) _exit(255);
    _exit(fn() & 0xff);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) == 255) return -1;
  return WEXITSTATUS(status);
}

namespace {
constexpr const char* kTestColumns = "1000";
[[maybe_unused]] const bool g_columns_set = setenv("COLUMNS", kTestColumns, 1) == 0;
}  // namespace

ScopedColumns::ScopedColumns(const char* columns) {
  if (columns != nullptr) setenv("COLUMNS", columns, 1);
  else unsetenv("COLUMNS");
}

ScopedColumns::~ScopedColumns() { setenv("COLUMNS", kTestColumns, 1); }

RunResult run_tool(const std::vector<std::string>& args, int timeout_s, const std::string& stdout_path) {
  return run_tool_as(static_cast<uid_t>(-1), args, timeout_s, stdout_path);
}

RunResult run_tool_as(uid_t user, const std::vector<std::string>& args, int timeout_s,
                      const std::string& stdout_path) {
  Sandbox scratch;
  std::vector<std::string> argv{Paths::tool()};
  argv.insert(argv.end(), args.begin(), args.end());
  return scratch.run_as(user, argv, {{"LD_PRELOAD", "<unset>"}}, timeout_s, stdout_path);
}

std::vector<std::string> test_pythons() {
  std::vector<std::string> out;
  std::stringstream list(GMP_TEST_PYTHONS);
  for (std::string path; std::getline(list, path, ':');) {
    if (!path.empty()) out.push_back(path);
  }
  return out;
}

std::string interpreter_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(info.param.rfind('/') + 1) + "_" + std::to_string(info.index);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

std::vector<std::string> run_args(const std::string& root, std::vector<std::string> cmd,
                                  std::vector<std::string> options) {
  std::vector<std::string> a{Paths::tool(), "run", "-o", root};
  a.insert(a.end(), options.begin(), options.end());
  a.push_back("--");
  a.insert(a.end(), cmd.begin(), cmd.end());
  return a;
}

std::map<std::string, std::string> tool_env(std::map<std::string, std::string> extra) {
  extra.emplace("LD_PRELOAD", "<unset>");
  extra.emplace("GPUMEMPROF_OUTPUT", "<unset>");
  return extra;
}

}  // namespace gmp::test
