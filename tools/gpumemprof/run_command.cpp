// `gpumemprof run`: profile a command and everything it starts. Preloads the shim (prepended to
// any LD_PRELOAD) and makes it the NVTX injection library (chaining to one already named in
// NVTX_INJECTION64_PATH), points every process's run directory into one root, passes terminating
// signals to the command, exits with its status, and prints what each CUDA process used and the
// next commands to run.
#include "bytes_text.h"
#include "check_limits.h"
#include "command_options.h"
#include "commands.h"
#include "config_rules.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "count_text.h"
#include "human_text.h"
#include "run_live.h"
#include "job_directory.h"
#include "process_facts.h"
#include "process_record.h"
#include "trace_format.h"
#include "trusted_dir.h"

namespace gmp::tool {
namespace {

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// The shim of this program's own tree: installed, bin/gpumemprof and GMP_INSTALL_SHIM_DIR/libgpumemprof.so
// under one prefix (cmake/install.cmake); in a build tree, build/bin/gpumemprof and build/lib/libgpumemprof.so.
std::string default_shim() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "libgpumemprof.so";
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  const std::string installed = dir + "/../" GMP_INSTALL_SHIM_DIR "/libgpumemprof.so";
  struct stat st {};
  return stat(installed.c_str(), &st) == 0 ? installed : dir + "/../lib/libgpumemprof.so";
}

// The Python bootstrap is lib/gpumemprof/python in both layouts: beside an installed shim
// (GMP_INSTALL_SHIM_DIR is lib/gpumemprof), below a build tree's (build/lib/gpumemprof/python).
std::string bootstrap_dir(const std::string& shim_path) {
  const std::string dir = shim_path.substr(0, shim_path.rfind('/'));
  return dir.ends_with("/" GMP_INSTALL_SHIM_DIR) ? dir + "/python" : dir + "/gpumemprof/python";
}

std::string absolute(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? resolved : path;
}

// ROOT reached, and created when missing, by the rules the processes reach their run directories
// with (trusted_dir.h; docs/run-directory.md, "Symlinks and ownership"): another user's symlink on
// the way is refused here, as GPUMEMPROF_OUTPUT through it would be. Resolving ROOT into a path
// without links first would hide the link from those rules. Returns the absolute path of the
// directory reached (what the processes are given), or nullopt with `error`; `created` when ROOT
// itself was made now.
std::optional<std::string> reach_root(const std::string& root, bool& created, std::string& error) {
  const uid_t self = geteuid();
  const PathParts parts = split_last_component(root);
  const Fd parent = open_trusted_dir(parts.parent, self, error);
  if (!parent) return std::nullopt;
  struct stat st {};
  created = fstatat(parent.get(), parts.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT &&
            may_write_into(parent.get(), parts.parent, self, error) &&
            mkdirat(parent.get(), parts.name.c_str(), 0777) == 0;
  const Fd dir = open_trusted_dir(root, self, error);
  if (!dir) return std::nullopt;
  char path[PATH_MAX];
  const std::string fd_link = "/proc/self/fd/" + std::to_string(dir.get());
  if (const ssize_t n = readlink(fd_link.c_str(), path, sizeof path - 1); n > 0) {
    return std::string(path, static_cast<size_t>(n));
  }
  // No /proc: the path as given, made absolute, which the processes then judge by the same rules.
  char cwd[PATH_MAX];
  if (root[0] == '/' || getcwd(cwd, sizeof cwd) == nullptr) return root;
  return std::string(cwd) + "/" + root;
}

std::string utc_now() {
  time_t t = time(nullptr);
  tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

// "rank 1 of 4: " for a process its launcher gave a rank, else nothing.
std::string rank_prefix(const ManifestRecord& m) {
  if (!m.rank) return "";
  return "rank " + std::to_string(*m.rank) + (m.world_size ? " of " + std::to_string(*m.world_size) : "") + ": ";
}

// A word the shell passes through as it is, else the text in single quotes.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                              "0123456789_-+=.,:/@%") == std::string::npos;
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// This program as a command the user can paste: `gpumemprof` when that is what PATH finds (this
// very file), else the absolute path of the running binary (a build tree's is seldom on PATH).
std::string self_command() {
  const std::string self = absolute("/proc/self/exe");
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  for (size_t at = 0; at <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', at), dirs.size());
    const std::string dir = end == at ? "." : dirs.substr(at, end - at);  // an empty entry is the current directory
    const std::string candidate = dir + "/gpumemprof";
    if (access(candidate.c_str(), X_OK) == 0) return absolute(candidate) == self ? "gpumemprof" : shell_word(self);
    at = end + 1;
  }
  return shell_word(self);
}

// "killed by signal 9 (SIGKILL)".
std::string signal_text(int sig) {
  const std::string name = analysis::signal_abbreviation(sig);
  return "killed by signal " + std::to_string(sig) + (name.empty() ? "" : " (" + name + ")");
}

// How the command's own process ended, as waitpid() told: "exited 3", "killed by signal 11
// (SIGSEGV), core dumped".
std::string wait_status_text(int status) {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (!WIFSIGNALED(status)) return "ended";
  return signal_text(WTERMSIG(status)) + (WCOREDUMP(status) ? ", core dumped" : "");
}

// How another process ended, as its summary.json says: "exited 1" where the shim saw the status
// (wait_status_text's words), "exited" where it did not.
std::string summary_end_text(const reader::RunDirectory& run) {
  const analysis::ProcessEnd end = analysis::process_end(run);
  const std::string status = end.exit_status ? " " + std::to_string(*end.exit_status) : "";
  switch (end.how) {
    case analysis::ProcessEnd::How::Unknown: return "ended without writing summary.json (killed by SIGKILL, or crashed)";
    case analysis::ProcessEnd::How::Running: return "still running (it left the command running)";
    case analysis::ProcessEnd::How::Signal: return signal_text(end.signal);
    case analysis::ProcessEnd::How::ExitCall: return "exited" + status + " through _exit";
    case analysis::ProcessEnd::How::Exec: return "replaced itself by exec";
    case analysis::ProcessEnd::How::Exit: break;
  }
  return "exited" + status;
}

// The commands to read what a run left: its report, its OOM explanations when it ran out of
// memory, and its HTML page (written beside the directory), each ready to paste.
void print_next(const std::string& self, const std::string& dir, const std::vector<std::string>& oom_dirs,
                const char* indent) {
  std::fprintf(stderr, "%snext: %s report %s\n", indent, self.c_str(), shell_word(dir).c_str());
  for (const std::string& d : oom_dirs) {
    std::fprintf(stderr, "%s      %s oom %s\n", indent, self.c_str(), shell_word(d).c_str());
  }
  std::fprintf(stderr, "%s      %s html %s -o %s\n", indent, self.c_str(), shell_word(dir).c_str(),
               shell_word(dir + ".html").c_str());
}

bool ran_out_of_memory(const reader::JobMember& member) {
  return member.run && member.run->figures.oom.failures > 0;
}

// One process: how it ended first (`child_status` when it is the command's own process), then
// its figures; `self` non-empty: its next commands too.
void print_run(const reader::JobMember& member, pid_t child, int child_status, const std::string& self) {
  if (!member.run) {
    std::fprintf(stderr, "gpumemprof run: %s\n", member.error.c_str());
    return;
  }
  const reader::RunDirectory& run = *member.run;
  const Summary& s = run.figures;
  const uint64_t pid = run.manifest.pid.value_or(0);
  const std::string ended =
      pid == static_cast<uint64_t>(child) ? wait_status_text(child_status) : summary_end_text(run);
  say(rank_prefix(run.manifest) + analysis::program_title(run.manifest) + " (pid " + std::to_string(pid) +
          "): " + ended,
      "  ", "      ", stderr);
  for (const DeviceFigures& d : s.devices) {
    std::fprintf(stderr, "    device %d: peak allocated %s, peak reserved %s\n", d.stats.device,
                 bytes_text(d.stats.allocated.peak).c_str(), bytes_text(d.stats.reserved.peak).c_str());
  }
  const std::vector<std::string> oom = oom_count_parts(s);
  for (size_t i = 0; i < oom.size(); ++i) std::fprintf(stderr, "    %s%s\n", i == 0 ? "OOM: " : "     ", oom[i].c_str());
  std::fprintf(stderr, "    alerts %llu\n", (unsigned long long)s.alerts.fired());
  std::fprintf(stderr, "    events: %s\n", reader::event_counts_line(run.events).c_str());
  for (const std::string& w : reader::event_count_warnings(run.events)) say("note: " + w, "    ", "      ", stderr);
  if (!self.empty()) {
    print_next(self, member.path, ran_out_of_memory(member) ? std::vector{member.path} : std::vector<std::string>{},
               "    ");
  }
}

// The alert thresholds in force: the option's, else the environment's when valid, else the default.
double threshold(const std::optional<double>& option, const SettingRule& rule, double fallback) {
  if (option) return *option;
  const char* env = std::getenv(rule.name);
  const auto v = env != nullptr ? rule.parse(env) : std::nullopt;
  return v ? std::get<double>(*v) : fallback;
}

// What the command line asks of `run`.
struct RunArgs {
  std::string root;  // --output; empty: named after the command
  std::string shim = default_shim();
  bool live = false;  // --live
  std::vector<std::pair<std::string, std::string>> env;  // settings of the profiled processes
  analysis::Limits limits;
  std::optional<double> warn, critical;  // as given, for the order of the two
  std::string warn_text, critical_text;
  int command = 0;  // where COMMAND is in argv
};

// What each option of kRunOptions' own section sets: a path of run's, or a setting of the profiled
// processes, passed on in their environment and checked by the rule the collector reads that
// variable with, so a value the process would refuse is refused here. The table's other section,
// the limits, is check's (kLimitOptions, take_limit_arg).
struct RunOptionTarget {
  std::string RunArgs::*path = nullptr;
  const SettingRule* setting = nullptr;
  bool RunArgs::*flag = nullptr;
};
const std::map<std::string, RunOptionTarget> kRunOptionTargets = {
    {"--output", {&RunArgs::root}},
    {"--shim", {&RunArgs::shim}},
    {"--warn-percent", {nullptr, &settings::warn_percent}},
    {"--critical-percent", {nullptr, &settings::critical_percent}},
    {"--sample-ms", {nullptr, &settings::sample_ms}},
    {"--on-alert", {nullptr, &settings::on_alert}},
    {"--oom-dir", {nullptr, &settings::oom_dir}},
    {"--log-level", {nullptr, &settings::log_level}},
    {"--trace-max", {nullptr, &settings::trace_max}},
    {"--metrics-dir", {nullptr, &settings::metrics_dir}},
    {"--device-limit", {nullptr, &settings::device_limit}},
    {"--live", {nullptr, nullptr, &RunArgs::live}},
};

bool is_limit(const Option& o) {
  return std::any_of(kLimitOptions.begin(), kLimitOptions.end(),
                     [&o](const Option& limit) { return std::strcmp(limit.name, o.name) == 0; });
}

// One of run's own options with its value `v`: nothing when taken, else the exit status after one line.
std::optional<int> take_run_option(const Option& o, const std::string& v, RunArgs& args) {
  const RunOptionTarget& target = kRunOptionTargets.at(o.name);
  if (target.path != nullptr) {
    args.*target.path = v;
    return std::nullopt;
  }
  const SettingRule& rule = *target.setting;
  const std::optional<SettingValue> parsed = rule.parse(v);
  if (!parsed) {
    std::fprintf(stderr, "gpumemprof run: invalid %s '%s': expected %s\n", o.name, echo_value(v).c_str(),
                 rule.accepted);
    return 2;
  }
  if (&rule == &settings::warn_percent) args.warn = std::get<double>(*parsed), args.warn_text = v;
  if (&rule == &settings::critical_percent) args.critical = std::get<double>(*parsed), args.critical_text = v;
  args.env.emplace_back(rule.name, v);
  return std::nullopt;
}

// The collector would replace a critical threshold below the warning by both defaults: the
// option given is refused instead, naming the other threshold in force.
std::optional<int> refuse_unordered_thresholds(const RunArgs& args) {
  const double warn_in_force = threshold(args.warn, settings::warn_percent, kDefaultWarnPercent);
  const double critical_in_force = threshold(args.critical, settings::critical_percent, kDefaultCriticalPercent);
  if (!(args.warn || args.critical) || thresholds_ordered(warn_in_force, critical_in_force)) return std::nullopt;
  const bool critical = args.critical.has_value();
  char other[32];
  std::snprintf(other, sizeof other, "%g", critical ? warn_in_force : critical_in_force);
  const SettingRule& given = critical ? settings::critical_percent : settings::warn_percent;
  std::fprintf(stderr, "gpumemprof run: invalid %s '%s': expected %s no %s than the %s threshold %s\n",
               critical ? "--critical-percent" : "--warn-percent",
               echo_value(critical ? args.critical_text : args.warn_text).c_str(), given.accepted,
               critical ? "lower" : "higher", critical ? "warning" : "critical", other);
  return 2;
}

// argv up to "--", by kRunOptions: each option it finds there is a limit or one of run's own.
// Nothing when COMMAND may start; else the exit status, after --help or one line on stderr.
std::optional<int> parse_run_args(int argc, char** argv, RunArgs& args) {
  int i = 0;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      std::fputs(help_text(kRunOptions).c_str(), stdout);
      return 0;
    }
    const Option* o = find_option(kRunOptions, argv[i]);
    if (o == nullptr) {
      std::fprintf(stderr, "gpumemprof run: unknown option '%s'; see gpumemprof run --help (COMMAND goes after --)\n",
                   a.c_str());
      return 2;
    }
    if (is_limit(*o)) {
      if (take_limit_arg("run", argc, argv, i, args.limits) == LimitArg::Refused) return 2;
      continue;
    }
    if (o->value == nullptr) {  // a flag (find_option takes no "=value" after one)
      args.*kRunOptionTargets.at(o->name).flag = true;
      continue;
    }
    const std::optional<std::string> v = option_value(argc, argv, i);
    if (!v) {
      std::fprintf(stderr, "gpumemprof run: option %s needs a value\n", a.substr(0, a.find('=')).c_str());
      return 2;
    }
    if (auto status = take_run_option(*o, *v, args)) return status;
  }
  if (auto status = refuse_unordered_thresholds(args)) return status;
  if (i >= argc) {
    std::fprintf(stderr, "gpumemprof run: no command given; usage: gpumemprof run [options] -- COMMAND [ARGS...]\n");
    return 2;
  }
  args.command = i;
  return std::nullopt;
}

// What the profiled processes get in their environment besides the settings: the shim preloaded
// (ahead of any LD_PRELOAD) and made the NVTX injection library, another tool already named there
// chained; the Python bootstrap beside the shim (docs/framework-bridge.md: tensor-level figures for
// PyTorch programs), ahead of the program's own PYTHONPATH, chaining to a sitecustomize it shadows.
struct ChildEnvironment {
  std::string preload, shim_path, nvtx_chain;
  std::optional<std::string> pythonpath;  // none: no bootstrap beside the shim
};

ChildEnvironment child_environment(const std::string& shim) {
  ChildEnvironment c;
  const std::string preload_prev = std::getenv("LD_PRELOAD") ? std::getenv("LD_PRELOAD") : "";
  c.shim_path = absolute(shim);
  c.preload = c.shim_path + (preload_prev.empty() ? "" : ":" + preload_prev);
  const char* nvtx_prev = std::getenv("NVTX_INJECTION64_PATH");
  c.nvtx_chain = nvtx_prev != nullptr && *nvtx_prev != '\0' && absolute(nvtx_prev) != c.shim_path ? nvtx_prev : "";
  const std::string bootstrap = bootstrap_dir(c.shim_path);
  const char* pythonpath_prev = std::getenv("PYTHONPATH");
  struct stat bootstrap_st {};
  if (stat(bootstrap.c_str(), &bootstrap_st) == 0 && S_ISDIR(bootstrap_st.st_mode)) {
    c.pythonpath =
        bootstrap + (pythonpath_prev != nullptr && *pythonpath_prev != '\0' ? ":" + std::string(pythonpath_prev) : "");
  }
  return c;
}

// A ROOT that exists but is no directory, or that the processes would refuse, would leave every
// process unprofiled, found out only once the command has run: refused before it starts. The
// path the processes are given, or nullopt after one line on stderr; `created` when ROOT was made now.
std::optional<std::string> prepare_root(const std::string& root, bool& created) {
  struct stat root_st {};
  if (stat(root.c_str(), &root_st) == 0 && !S_ISDIR(root_st.st_mode)) {
    std::fprintf(stderr, "gpumemprof run: -o %s is not a directory; give a directory (created if missing)\n",
                 root.c_str());
    return std::nullopt;
  }
  std::string error;
  const std::optional<std::string> reached = reach_root(root, created, error);
  if (!reached) std::fprintf(stderr, "gpumemprof run: cannot use -o %s: %s\n", root.c_str(), error.c_str());
  return reached;
}

// What ROOT already holds (earlier runs: a CI workspace that is kept) is neither summarised nor
// checked as this run's: only the run directories that appear while the command runs are.
std::set<std::string> earlier_runs(const std::string& root) {
  std::set<std::string> earlier;
  std::string ignored;  // no run directory yet: nothing earlier
  const auto members = reader::open_job_directory(root, ignored);
  for (const reader::JobMember& m : members.value_or(std::vector<reader::JobMember>{})) earlier.insert(m.path);
  return earlier;
}

// The id the command's processes write in their manifests (launcher_env.h): which runs under ROOT
// are this command's, even with another `gpumemprof run` writing there at the same time.
std::string invocation_id() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return std::to_string(now.tv_sec) + std::to_string(1'000'000'000 + now.tv_nsec).substr(1) + "-" +
         std::to_string(getpid());
}

// Starts `command` profiled, its run directories under `root`, and passes terminating signals on
// to it. With `output` (not -1) its stdout and stderr go there and its stdin is /dev/null (--live:
// the terminal is the view's). Its pid; or -1 after one line when fork failed.
pid_t start_profiled(char** command, const RunArgs& args, const ChildEnvironment& c, const std::string& root,
                     const std::string& invocation, int output) {
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  const pid_t child = fork();
  if (child == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(sig, SIG_DFL);
    if (output >= 0) {
      const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(output, STDOUT_FILENO) < 0 ||
          dup2(output, STDERR_FILENO) < 0) {
        _exit(127);
      }
    }
    setenv("LD_PRELOAD", c.preload.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", c.shim_path.c_str(), 1);
    if (c.pythonpath) setenv("PYTHONPATH", c.pythonpath->c_str(), 1);
    if (!c.nvtx_chain.empty()) setenv("GPUMEMPROF_NVTX_CHAIN", c.nvtx_chain.c_str(), 1);
    // A rank's directory is named by its rank (rank3.python.1234), anything else's <exe>.<pid>.
    setenv("GPUMEMPROF_OUTPUT", (root + "/%R%e.%p").c_str(), 1);
    setenv(kInvocationVariable, invocation.c_str(), 1);
    for (auto& [k, v] : args.env) setenv(k.c_str(), v.c_str(), 1);
    execvp(command[0], command);
    std::fprintf(stderr, "gpumemprof run: cannot run %s: %s\n", command[0], std::strerror(errno));
    _exit(127);
  }
  if (child < 0) {
    std::fprintf(stderr, "gpumemprof run: fork failed: %s\n", std::strerror(errno));
    return -1;
  }
  g_child = child;
  return child;
}

// Waits for the command started by start_profiled; its wait status.
int wait_command(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  return status;
}

// --live: where the command's output goes, `ROOT/output.log` (output.1.log, ... when ROOT holds
// one from an earlier run); -1 after one line when it cannot be made.
int open_output_file(const std::string& root, std::string& path) {
  for (int n = 0; n < 1000; ++n) {
    path = root + (n == 0 ? "/output.log" : "/output." + std::to_string(n) + ".log");
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) {
      if (fd < 0) std::fprintf(stderr, "gpumemprof run: cannot create %s: %s\n", path.c_str(), std::strerror(errno));
      return fd;
    }
  }
  std::fprintf(stderr, "gpumemprof run: cannot create %s/output.log: 1000 of them exist\n", root.c_str());
  return -1;
}

// The run directories under ROOT that this command's processes wrote; `error` says why there are
// none when ROOT holds no run directory at all.
std::vector<reader::JobMember> this_runs(const std::string& root, const std::set<std::string>& earlier,
                                         const std::string& invocation, std::string& error) {
  std::vector<reader::JobMember> members;
  for (reader::JobMember& m : reader::open_job_directory(root, error).value_or(std::vector<reader::JobMember>{})) {
    // A run that cannot be read is counted when it appeared while the command ran.
    const bool ours = m.run ? m.run->manifest.invocation == invocation : earlier.count(m.path) == 0;
    if (ours) members.push_back(std::move(m));
  }
  return members;
}

// How each process ended and what it used, and the commands to read its results.
void print_processes(const std::vector<reader::JobMember>& members, const std::string& root,
                     const std::set<std::string>& earlier, const char* command, pid_t child, int status) {
  std::fprintf(stderr, "\ngpumemprof: %s under %s\n", counted(members.size(), "profiled process").c_str(),
               root.c_str());
  if (!earlier.empty()) {
    const std::string held = earlier.size() == 1 ? "1 run directory" : grouped(earlier.size()) + " run directories";
    std::fprintf(stderr, "  (%s already held %s of earlier runs: not counted or checked here)\n", root.c_str(),
                 held.c_str());
  }
  // Several processes are a job: its view (docs/report.md §Jobs) shows them side by side, with
  // each one's own report command, so its commands are the next steps printed.
  const bool job = members.size() > 1;
  const std::string self = members.empty() ? "" : self_command();
  for (const reader::JobMember& m : members) print_run(m, child, status, job ? "" : self);
  if (members.empty()) std::fprintf(stderr, "  (no process allocated GPU memory)\n");
  if (job) {
    std::vector<std::string> oom_dirs;
    for (const reader::JobMember& m : members) {
      if (ran_out_of_memory(m)) oom_dirs.push_back(m.path);
    }
    print_next(self, root, oom_dirs, "  ");
  }
  // The command's own process says how it ended too when it is no CUDA process (a shell script).
  const bool child_profiled = std::any_of(members.begin(), members.end(), [&](const reader::JobMember& m) {
    return m.run && m.run->manifest.pid == static_cast<uint64_t>(child);
  });
  if (!members.empty() && !child_profiled) {
    std::fprintf(stderr, "  the command %s (pid %d): %s\n", command, static_cast<int>(child),
                 wait_status_text(status).c_str());
  }
}

// The limits on this run's processes: 0 when none was asked or all hold, 1 when one broke, 2 when
// there was nothing to check (a gate that saw nothing does not pass).
int check_run_limits(const analysis::Limits& limits, const std::vector<reader::JobMember>& members,
                     const std::string& root, const std::set<std::string>& earlier, const std::string& error) {
  if (!limits.any()) return 0;
  if (members.empty()) {
    const std::string none = earlier.empty() ? error : root + " holds no run directory of this run (its command " +
                                                           "allocated no GPU memory under the profiler)";
    std::fprintf(stderr, "gpumemprof run: %s\n", none.c_str());
    return 2;
  }
  const std::string checked = earlier.empty() ? root : "this run's processes under " + root;
  return check_limits("run", checked, members, limits, stderr);
}

}  // namespace

int run_main(int argc, char** argv) {
  RunArgs args;
  if (auto status = parse_run_args(argc, argv, args)) return *status;
  if (auto status = prepare_limits("run", args.limits)) return *status;
  if (args.live && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
    std::fprintf(stderr,
                 "gpumemprof run: --live needs a terminal on stdin and stdout; leave it out here (gpumemprof top "
                 "--root ROOT shows the run from a terminal)\n");
    return 2;
  }
  struct stat st {};
  if (stat(args.shim.c_str(), &st) != 0) {
    std::fprintf(stderr, "gpumemprof run: cannot find the shim %s; give its path with --shim\n", args.shim.c_str());
    return 2;
  }
  char** command = argv + args.command;
  if (args.root.empty()) {
    const std::string cmd = command[0];
    args.root = "gpumemprof." + cmd.substr(cmd.rfind('/') + 1) + "." + utc_now();
  }
  const ChildEnvironment environment = child_environment(args.shim);
  bool created_root = false;
  const std::optional<std::string> root = prepare_root(args.root, created_root);
  if (!root) return 2;
  const std::set<std::string> earlier = earlier_runs(*root);
  const std::string invocation = invocation_id();

  std::string output_path;
  const int output = args.live ? open_output_file(*root, output_path) : -1;
  if (args.live && output < 0) return 2;
  const pid_t child = start_profiled(command, args, environment, *root, invocation, output);
  if (output >= 0) close(output);
  if (child < 0) return 2;
  int status = 0;
  if (args.live) {
    const std::string path = command[0], cmd = path.substr(path.rfind('/') + 1);
    std::optional<int> reaped;
    watch_command({cmd, child, *root, earlier, output_path, [&]() -> std::optional<std::string> {
                     int s = 0;
                     if (!reaped && waitpid(child, &s, WNOHANG) == child) {
                       g_child = 0;  // reaped: its pid is no longer ours to signal
                       reaped = s;
                     }
                     return reaped ? std::optional<std::string>(wait_status_text(*reaped)) : std::nullopt;
                   }});
    if (!reaped) std::fprintf(stderr, "gpumemprof run: waiting for %s (pid %d) to end\n", cmd.c_str(), child);
    status = reaped ? *reaped : wait_command(child);
    std::fprintf(stderr, "gpumemprof run: %s's output is in %s\n", cmd.c_str(), output_path.c_str());
  } else {
    status = wait_command(child);
  }

  std::string error;  // no run directory under ROOT: nothing allocated GPU memory
  const std::vector<reader::JobMember> members = this_runs(*root, earlier, invocation, error);
  print_processes(members, *root, earlier, command[0], child, status);
  const int limits_status = check_run_limits(args.limits, members, *root, earlier, error);
  // Nothing to read later: a directory this run made and nothing wrote into is not left behind.
  if (members.empty() && created_root && rmdir(root->c_str()) == 0) {
    std::fprintf(stderr, "  the empty directory %s is removed\n", root->c_str());
  }

  if (WIFSIGNALED(status)) {
    // Die the same way, so that callers see the command's fate, not ours; but dump no core of our
    // own, which would take the place of the command's (as GNU timeout does).
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
  }
  const int command_status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return command_status != 0 ? command_status : limits_status;
}

}  // namespace gmp::tool
