#include "alert_actions.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "clock.h"
#include "file_io.h"
#include "log.h"
#include "units.h"

extern char** environ;

namespace gmp {
namespace {

constexpr uint64_t kMinIntervalNs = 1'000'000'000ull;

std::string percent(double v) {
  char buf[16];
  snprintf(buf, sizeof buf, "%.1f%%", v);
  return buf;
}

double share(uint64_t part, uint64_t total) { return total ? 100.0 * static_cast<double>(part) / total : 0.0; }

}  // namespace

std::string alert_message(const Alert& a, const Config& c) {
  std::string upper = alert_type_name(a.type);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const std::string head = (a.fired ? "" : "cleared ") + upper + " device " + std::to_string(a.device) + ": ";
  switch (a.type) {
    case AlertType::Warning:
    case AlertType::Critical:
      return head + "allocated " + mib_or_gib(a.allocated) + " is " + percent(share(a.allocated, a.total)) + " of " +
             mib_or_gib(a.total) + " (threshold " + percent(a.type == AlertType::Warning ? c.warn_percent : c.critical_percent) +
             ")";
    case AlertType::Fragmentation:
      return head + percent(100.0 * a.ratio) + " of " + mib_or_gib(a.reserved) + " reserved is not allocated (threshold " +
             percent(100.0 * c.fragmentation) + ")";
    case AlertType::Growth:
      return head + "allocated stayed at " + mib_or_gib(a.allocated) + " or more, against a baseline of " + mib_or_gib(a.baseline) +
             " (threshold +" + mib_or_gib(c.leak_bytes) + ")";
  }
  return head;
}

nlohmann::json alert_json(const Alert& a, const std::string& device_name, const ProcessInfo& info,
                          const std::string& run_dir, const Config& c) {
  nlohmann::json j = {
      {"schema_version", 1},
      {"type", alert_type_name(a.type)},
      {"state", a.fired ? "fired" : "cleared"},
      {"message", alert_message(a, c)},
      {"device", a.device},
      {"device_name", device_name},
      {"allocated_bytes", a.allocated},
      {"reserved_bytes", a.reserved},
      {"total_bytes", a.total},
      {"time_utc", iso8601_utc(realtime_ns())},
      {"t_ns", a.t_ns > info.start_monotonic_ns ? a.t_ns - info.start_monotonic_ns : 0},
      {"pid", info.pid},
      {"exe", info.exe},
      {"host", info.host},
      {"rank", info.rank},
      {"run_dir", run_dir},
  };
  switch (a.type) {
    case AlertType::Warning: j["threshold_percent"] = c.warn_percent; j["threshold_bytes"] = a.threshold_bytes; break;
    case AlertType::Critical: j["threshold_percent"] = c.critical_percent; j["threshold_bytes"] = a.threshold_bytes; break;
    case AlertType::Fragmentation: j["fragmentation_ratio"] = a.ratio; j["threshold_ratio"] = c.fragmentation; break;
    case AlertType::Growth: j["baseline_bytes"] = a.baseline; j["leak_bytes"] = c.leak_bytes; break;
  }
  return j;
}

AlertCommand::AlertCommand(const std::string& command) {
  std::istringstream in(command);
  for (std::string w; in >> w;) argv_.push_back(w);
}

void AlertCommand::run(const Alert& a, const std::string& json) {
  reap();
  if (argv_.empty()) return;
  const uint64_t now = now_ns();
  uint64_t& last = last_start_ns_[static_cast<size_t>(a.type)];
  if (last != 0 && now - last < kMinIntervalNs) return;
  last = now;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.rfind("GPUMEMPROF_ALERT_JSON=", 0) == 0 || kv.rfind("GPUMEMPROF_ENABLE=", 0) == 0) continue;
    env.emplace_back(kv);
  }
  env.push_back("GPUMEMPROF_ALERT_JSON=" + json);
  env.push_back("GPUMEMPROF_ENABLE=0");  // the command inherits LD_PRELOAD; it must not profile itself
  std::vector<char*> args, envp;
  for (auto& s : argv_) args.push_back(s.data());
  args.push_back(nullptr);
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, p[0], 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(p[0]);
  if (rc != 0) {
    log::error("cannot start GPUMEMPROF_ON_ALERT command '{}': error {}", argv_[0], rc);
    close(p[1]);
    return;
  }
  children_.push_back(pid);
  fcntl(p[1], F_SETFL, O_NONBLOCK);  // a command that never reads must not stall the collector
  write_all(p[1], json.data(), json.size());
  close(p[1]);
}

void AlertCommand::reap() {
  for (auto it = children_.begin(); it != children_.end();) {
    int status;
    it = waitpid(*it, &status, WNOHANG) == 0 ? it + 1 : children_.erase(it);
  }
}

}  // namespace gmp
