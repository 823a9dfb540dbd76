// What happens when an alert fires or clears, besides the trace event: a line on stderr and, if
// GPUMEMPROF_ON_ALERT names a command, that command started without a shell, with the alert as
// JSON on its standard input and in GPUMEMPROF_ALERT_JSON (docs/alerts.md), at most once per
// second per alert type, never waited for.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alerts.h"
#include "process_info.h"

namespace gmp {

nlohmann::json alert_json(const Alert& a, const std::string& device_name, const ProcessInfo& info,
                          const std::string& run_dir, const Config& config);
std::string alert_message(const Alert& a, const Config& config);

class AlertCommand {
 public:
  explicit AlertCommand(const std::string& command);
  // Starts the command unless one was started for this alert type less than a second ago.
  void run(const Alert& a, const std::string& json);
  // Collects exited commands so none stays a zombie.
  void reap();

 private:
  std::vector<std::string> argv_;
  std::array<uint64_t, 5> last_start_ns_{};
  std::vector<pid_t> children_;
};

}  // namespace gmp
