// Runs test programs under the shim against the fake driver, and reads what they left behind.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gmp::test {

struct Paths {
  static std::string shim() { return GMP_SHIM_PATH; }
  static std::string fake_dir() { return GMP_FAKE_DIR; }
  static std::string bin(const std::string& name) { return std::string(GMP_TEST_BIN) + "/" + name; }
  static std::string tool() { return GMP_TOOL_PATH; }
};

struct RunResult {
  int exit_code = -1;    // when exited normally
  int term_signal = 0;   // when killed by a signal
  std::string out, err;
};

class Sandbox {
 public:
  Sandbox();
  ~Sandbox();
  const std::string& dir() const { return dir_; }

  // Environment for a profiled run: shim preloaded, fake driver first on the library path, run
  // directories under this sandbox. `extra` overrides or adds; a value of "<unset>" removes.
  std::map<std::string, std::string> env(const std::map<std::string, std::string>& extra = {}) const;

  // `stdout_path`: where the program's stdout goes (captured in RunResult::out when empty).
  RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra = {},
                int timeout_s = 120, const std::string& stdout_path = {}) const;
  // The same as another user (`user` as uid and gid, no supplementary groups; needs root): what
  // that user may read of the files a test made. The output files are opened before the switch.
  RunResult run_as(uid_t user, const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& extra = {}, int timeout_s = 120,
                   const std::string& stdout_path = {}) const;
  // Starts without waiting; stdout is a pipe the caller reads through read_line().
  pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra, int* stdout_fd) const;

  // Run directories created under the sandbox, sorted by name.
  std::vector<std::string> run_dirs() const;
  // The only run directory (fails the test if there is not exactly one).
  std::string only_run_dir() const;

 private:
  std::string dir_;
};

RunResult wait_for(pid_t pid, int stdout_fd, int stderr_fd, int timeout_s);
std::string read_line(int fd, int timeout_ms);
nlohmann::json read_json_file(const std::string& path);
bool exists(const std::string& path);
// `text` with every run of spaces and newlines made one space: for finding a sentence of the
// --help, which lays its lines out for 80 columns.
std::string flat(const std::string& text);
// Runs the gpumemprof command; returns its result. A run past `timeout_s` is killed and fails the
// test; `stdout_path` as in Sandbox::run (e.g. "/dev/full").
RunResult run_tool(const std::vector<std::string>& args, int timeout_s = 120, const std::string& stdout_path = {});
// run_tool as another user (Sandbox::run_as).
RunResult run_tool_as(uid_t user, const std::vector<std::string>& args, int timeout_s = 120,
                      const std::string& stdout_path = {});

// Another local user, for what one user can do to another's profiling (issue 28): `nobody`. Tests
// that need it skip unless they run as root (CI does).
struct OtherUser {
  uid_t uid;
  gid_t gid;
};
OtherUser other_user();
#define SKIP_UNLESS_ROOT() \
  if (geteuid() != 0) GTEST_SKIP() << "acting as another user needs root"
// Runs `fn` in a forked child as the other user (no supplementary groups); returns what `fn`
// returned, or -1 when the child could not become that user or died. `fn` must not use gtest's
// assertions (they would fail in the child, unseen): it returns 0 for success.
int as_other_user(const std::function<int()>& fn);

// The tools' text output fits the terminal, 80 columns when stdout is not one (docs/report.md,
// "Width"). The tests that pin whole lines of prose run with COLUMNS=1000 (set for the whole test
// program); a test of the width itself sets its own for its lifetime (nullptr: unset).
class ScopedColumns {
 public:
  explicit ScopedColumns(const char* columns);
  ~ScopedColumns();
};

// `gpumemprof run -o ROOT [OPTIONS] -- CMD...` as an argv, and the environment it runs in: the
// tool itself is never preloaded, and the run directories are the ones it names (the fake driver
// stays on the library path for the command). Run them with Sandbox::run.
std::vector<std::string> run_args(const std::string& root, std::vector<std::string> cmd,
                                  std::vector<std::string> options = {});
std::map<std::string, std::string> tool_env(std::map<std::string, std::string> extra = {});

// The CPython interpreters of GMP_TEST_PYTHONS (tests/test_pythons.cmake), and a test name for one
// of them as a test parameter.
std::vector<std::string> test_pythons();
std::string interpreter_name(const ::testing::TestParamInfo<std::string>& info);

}  // namespace gmp::test
