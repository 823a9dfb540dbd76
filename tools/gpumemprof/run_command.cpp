// `gpumemprof run`: profile a command and everything it starts. Preloads the shim (prepended to
// any LD_PRELOAD) and makes it the NVTX injection library (chaining to one already named in
// NVTX_INJECTION64_PATH), points every process's run directory into one root, passes terminating
// signals to the command, exits with its status, and prints what each CUDA process used and the
// next commands to run.
#include "bytes_text.h"
#include "check_limits.h"
#include "commands.h"

#include <limits.h>
#include <signal.h>
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
#include <string>
#include <vector>

#include "format.h"
#include "job_directory.h"
#include "trace_format.h"
#include "value_text.h"

namespace gmp::tool {
namespace {

constexpr const char* kUsage =
    "usage: gpumemprof run [options] -- COMMAND [ARGS...]\n"
    "  Runs COMMAND with libgpumemprof.so preloaded. Every process it starts that uses GPU memory\n"
    "  gets a run directory under ROOT: rank<R>.<exe>.<pid> for a rank of torchrun, mpirun or srun,\n"
    "  else <exe>.<pid>; the summary and the next commands (gpumemprof report ROOT for a job) are\n"
    "  printed at the end.\n"
    "  NVTX ranges and marks are recorded too: NVTX_INJECTION64_PATH is set to the shim, and a tool\n"
    "  it already named (Nsight Systems) is chained through GPUMEMPROF_NVTX_CHAIN and keeps working.\n"
    "options:\n"
    "  -o, --output ROOT        where run directories go (default gpumemprof.<command>.<UTC time>)\n"
    "  --warn-percent N         warning alert threshold, % of device memory (default 80)\n"
    "  --critical-percent N     critical alert threshold (default 95)\n"
    "  --sample-ms N            NVML telemetry period in ms, 0 = off (default 100)\n"
    "  --on-alert 'CMD ARGS'    command started on every alert (no shell)\n"
    "  --oom-dir DIR            where OOM bundles go (default <run dir>/oom)\n"
    "  --log-level LEVEL        trace, debug, info, warn (default), error, critical, off\n"
    "  --trace-max SIZE         disk the trace may take, 0 = unbounded (default 1GiB); past it the\n"
    "                           oldest events are dropped, the summary stays exact\n"
    "  --metrics-dir DIR        each process keeps its figures in DIR as a Prometheus textfile\n"
    "                           (node_exporter's textfile collector; docs/metrics.md)\n"
    "  --device-limit LIMIT     rehearse a smaller GPU: 24GiB, a GPU name (L4, A10, A100-40GB, A100-80GB,\n"
    "                           H100-80GB, RTX-4090) or per device 0:24GiB,1:L4 (docs/device-limit.md)\n"
    "  --shim PATH              libgpumemprof.so to preload (default: ../" GMP_INSTALL_SHIM_DIR "/ from this\n"
    "                           program's directory, where it is installed, else ../lib/ in a build tree)\n"
    "memory limits, checked on every run directory under ROOT once the command ends (docs/check.md):\n";
// After kLimitOptionsHelp.
constexpr const char* kUsageEnd =
    "Exit status: the command's (a command killed by a signal kills gpumemprof with it); when it\n"
    "succeeded, 1 if a limit broke and 2 if the run directories could not be read; 2 for a bad\n"
    "command line.\n";

// Options that map one-to-one onto the profiled processes' environment.
const std::map<std::string, std::string> kEnvOptions = {
    {"--warn-percent", "GPUMEMPROF_WARN_PERCENT"}, {"--critical-percent", "GPUMEMPROF_CRITICAL_PERCENT"},
    {"--sample-ms", "GPUMEMPROF_SAMPLE_MS"},       {"--on-alert", "GPUMEMPROF_ON_ALERT"},
    {"--oom-dir", "GPUMEMPROF_OOM_DIR"},           {"--log-level", "GPUMEMPROF_LOG_LEVEL"},
    {"--trace-max", "GPUMEMPROF_TRACE_MAX"},       {"--metrics-dir", "GPUMEMPROF_METRICS_DIR"},
    {"--device-limit", "GPUMEMPROF_DEVICE_LIMIT"},
};

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

// `next`: end with the command of the process's own report.
void print_run(const reader::JobMember& member, bool next) {
  if (!member.run) {
    std::fprintf(stderr, "gpumemprof run: %s\n", member.error.c_str());
    return;
  }
  const reader::RunDirectory& run = *member.run;
  const Summary& s = run.figures;
  const std::string& exe = run.manifest.exe;
  std::fprintf(stderr, "  %s%s (pid %llu)\n", rank_prefix(run.manifest).c_str(), exe.empty() ? "?" : exe.c_str(),
               (unsigned long long)run.manifest.pid.value_or(0));
  for (const DeviceFigures& d : s.devices) {
    std::fprintf(stderr, "    device %d: peak allocated %s, peak reserved %s\n", d.stats.device,
                 bytes_text(d.stats.allocated.peak).c_str(), bytes_text(d.stats.reserved.peak).c_str());
  }
  std::fprintf(stderr, "    out-of-memory failures %llu (bundles %llu), alerts %llu\n",
               (unsigned long long)s.oom.failures, (unsigned long long)s.oom.bundles_written,
               (unsigned long long)s.alerts.fired());
  std::fprintf(stderr, "    events: %s\n", reader::event_counts_line(run.events).c_str());
  for (const std::string& w : reader::event_count_warnings(run.events))
    std::fprintf(stderr, "    note: %s\n", w.c_str());
  if (next) std::fprintf(stderr, "    next: gpumemprof report %s\n", member.path.c_str());
}

}  // namespace

int run_main(int argc, char** argv) {
  std::string root, shim = default_shim();
  std::vector<std::pair<std::string, std::string>> env;
  Limits limits;
  int i = 0;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      for (const char* part : {kUsage, kLimitOptionsHelp, kUsageEnd}) std::fputs(part, stdout);
      return 0;
    }
    if (const LimitArg taken = take_limit_arg("run", argc, argv, i, limits); taken != LimitArg::Other) {
      if (taken == LimitArg::Refused) return 2;
      continue;
    }
    const bool takes_value = a == "-o" || a == "--output" || a == "--shim" || kEnvOptions.count(a);
    if (!takes_value) {
      std::fprintf(stderr, "gpumemprof run: unknown option '%s'; see gpumemprof run --help (COMMAND goes after --)\n",
                   a.c_str());
      return 2;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gpumemprof run: option %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--trace-max") {
      const auto max = parse_size(v);
      if (!max || (*max != 0 && *max < kMinTraceMax)) {
        std::fprintf(stderr, "gpumemprof run: --trace-max '%s': expected 0 (unbounded) or a size of at least 1MiB "
                     "such as 512M, 1GiB or 20G\n", v.c_str());
        return 2;
      }
    }
    if (a == "-o" || a == "--output") root = v;
    else if (a == "--shim") shim = v;
    else env.emplace_back(kEnvOptions.at(a), v);
  }
  if (i >= argc) {
    std::fprintf(stderr, "gpumemprof run: no command given; usage: gpumemprof run [options] -- COMMAND [ARGS...]\n");
    return 2;
  }
  if (auto status = prepare_limits("run", limits)) return *status;
  struct stat st {};
  if (stat(shim.c_str(), &st) != 0) {
    std::fprintf(stderr, "gpumemprof run: cannot find the shim %s; give its path with --shim\n", shim.c_str());
    return 2;
  }
  if (root.empty()) {
    const std::string cmd = argv[i];
    root = "gpumemprof." + cmd.substr(cmd.rfind('/') + 1) + "." + utc_now();
  }
  const std::string preload_prev = std::getenv("LD_PRELOAD") ? std::getenv("LD_PRELOAD") : "";
  const std::string shim_path = absolute(shim);
  const std::string preload = shim_path + (preload_prev.empty() ? "" : ":" + preload_prev);
  // NVTX: the shim is the injection library; another tool already named there is chained.
  const char* nvtx_prev = std::getenv("NVTX_INJECTION64_PATH");
  const std::string nvtx_chain =
      nvtx_prev != nullptr && *nvtx_prev != '\0' && absolute(nvtx_prev) != shim_path ? nvtx_prev : "";
  // The Python bootstrap beside the shim (docs/framework-bridge.md): tensor-level figures for
  // PyTorch programs. Ahead of the program's own PYTHONPATH; it chains to a sitecustomize it shadows.
  const std::string bootstrap = bootstrap_dir(shim_path);
  const char* pythonpath_prev = std::getenv("PYTHONPATH");
  struct stat bootstrap_st {};
  const bool has_bootstrap = stat(bootstrap.c_str(), &bootstrap_st) == 0 && S_ISDIR(bootstrap_st.st_mode);
  const std::string pythonpath =
      bootstrap + (pythonpath_prev != nullptr && *pythonpath_prev != '\0' ? ":" + std::string(pythonpath_prev) : "");
  // A ROOT that exists but is no directory would leave every process unprofiled, found out only
  // once the command has run: refused before it starts.
  const bool created_root = mkdir(root.c_str(), 0777) == 0;
  struct stat root_st {};
  if (!created_root && errno == EEXIST && (stat(root.c_str(), &root_st) != 0 || !S_ISDIR(root_st.st_mode))) {
    std::fprintf(stderr, "gpumemprof run: -o %s is not a directory; give a directory (created if missing)\n",
                 root.c_str());
    return 2;
  }
  root = absolute(root);

  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  const pid_t child = fork();
  if (child == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(sig, SIG_DFL);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", shim_path.c_str(), 1);
    if (has_bootstrap) setenv("PYTHONPATH", pythonpath.c_str(), 1);
    if (!nvtx_chain.empty()) setenv("GPUMEMPROF_NVTX_CHAIN", nvtx_chain.c_str(), 1);
    // A rank's directory is named by its rank (rank3.python.1234), anything else's <exe>.<pid>.
    setenv("GPUMEMPROF_OUTPUT", (root + "/%R%e.%p").c_str(), 1);
    for (auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execvp(argv[i], argv + i);
    std::fprintf(stderr, "gpumemprof run: cannot run %s: %s\n", argv[i], std::strerror(errno));
    _exit(127);
  }
  if (child < 0) {
    std::fprintf(stderr, "gpumemprof run: fork failed: %s\n", std::strerror(errno));
    return 2;
  }
  g_child = child;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;

  std::string error;  // no run directory under ROOT: nothing allocated GPU memory
  const std::vector<reader::JobMember> members = reader::open_job_directory(root, error).value_or(
      std::vector<reader::JobMember>{});
  std::fprintf(stderr, "\ngpumemprof: %s under %s\n", counted(members.size(), "profiled process").c_str(),
               root.c_str());
  // Several processes are a job: its view (docs/report.md §Jobs) shows them side by side, with
  // each one's own report command, so it is the one next step printed.
  const bool job = members.size() > 1;
  for (const reader::JobMember& m : members) print_run(m, !job);
  if (members.empty()) std::fprintf(stderr, "  (no process allocated GPU memory)\n");
  if (job) std::fprintf(stderr, "  next: gpumemprof report %s\n", root.c_str());
  const int limits_status = limits.any() ? check_limits("run", root, limits, stderr) : 0;
  // Nothing to read later: a directory this run made and nothing wrote into is not left behind.
  if (members.empty() && created_root && rmdir(root.c_str()) == 0) {
    std::fprintf(stderr, "  the empty directory %s is removed\n", root.c_str());
  }

  if (WIFSIGNALED(status)) {
    // Die the same way, so that callers see the command's fate, not ours.
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
  }
  const int command_status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return command_status != 0 ? command_status : limits_status;
}

}  // namespace gmp::tool
