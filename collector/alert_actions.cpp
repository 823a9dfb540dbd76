#include "alert_actions.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "bytes_text.h"
#include "clock.h"
#include "file_io.h"
#include "hidden_child.h"
#include "log.h"

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
  const auto size = [](uint64_t bytes) { return bytes_text(bytes, ByteUnits::MiBOrGiB); };
  switch (a.type) {
    case AlertType::Warning:
    case AlertType::Critical:
      return head + "allocated " + size(a.allocated) + " is " + percent(share(a.allocated, a.total)) + " of " +
             size(a.total) + " (threshold " +
             percent(a.type == AlertType::Warning ? c.warn_percent : c.critical_percent) + ")";
    case AlertType::Fragmentation:
      return head + percent(100.0 * a.ratio) + " of " + size(a.reserved) +
             (a.framework ? " reserved by PyTorch is cached, not allocated to tensors (threshold "
                          : " reserved is not allocated (threshold ") +
             percent(100.0 * c.fragmentation) + ")";
    case AlertType::Growth:
      return head + (a.framework ? "PyTorch's allocated (tensors) stayed at " : "allocated stayed at ") +
             size(a.allocated) + " or more, against a baseline of " + size(a.baseline) + " (threshold +" +
             size(c.leak_bytes) + ")";
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
    case AlertType::Critical:
      j["threshold_percent"] = c.critical_percent;
      j["threshold_bytes"] = a.threshold_bytes;
      break;
    case AlertType::Fragmentation: j["fragmentation_ratio"] = a.ratio; j["threshold_ratio"] = c.fragmentation; break;
    case AlertType::Growth: j["baseline_bytes"] = a.baseline; j["leak_bytes"] = c.leak_bytes; break;
  }
  if (a.framework) j["level"] = "framework";  // allocated and reserved are PyTorch's
  return j;
}

AlertCommand::AlertCommand(const std::string& command) {
  std::istringstream in(command);
  for (std::string w; in >> w;) argv_.push_back(w);
}

int AlertCommand::open_output() const {
  const int dirfd = output_dir_ != nullptr ? output_dir_->fd() : -1;
  if (dirfd < 0) return -1;
  return openat(dirfd, output_name_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
}

void AlertCommand::run(const Alert& a, const std::string& json) {
  if (argv_.empty()) return;
  const uint64_t now = now_ns();
  uint64_t& last = last_start_ns_[static_cast<size_t>(a.type)];
  if (last != 0 && now - last < kMinIntervalNs) return;
  last = now;
  const std::string path = find_executable(argv_[0]);
  if (path.empty()) {
    log::error("cannot start GPUMEMPROF_ON_ALERT command '{}': not found or not executable", argv_[0]);
    return;
  }
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
  // Its output goes to the run directory, never to the program's stdout or stderr.
  const int out = open_output();
  const int sink = out >= 0 ? out : open("/dev/null", O_WRONLY | O_CLOEXEC);
  int p[2];
  if (sink < 0 || pipe2(p, O_CLOEXEC) != 0) {
    if (sink >= 0) close(sink);
    return;
  }
  int error = 0;
  const bool started = start_hidden_child(path, args.data(), envp.data(), p[0], sink, &error);
  close(p[0]);
  close(sink);
  if (!started) {
    log::error("cannot start GPUMEMPROF_ON_ALERT command '{}': {}", argv_[0], std::strerror(error));
    close(p[1]);
    return;
  }
  fcntl(p[1], F_SETFL, O_NONBLOCK);  // a command that never reads must not stall the collector
  write_all(p[1], json.data(), json.size());
  close(p[1]);
}

}  // namespace gmp
