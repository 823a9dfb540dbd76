// What happens when an alert fires or clears, besides the trace event: a line on stderr and, if
// GPUMEMPROF_ON_ALERT names a command, that command started without a shell, with the alert as
// JSON on its standard input and in GPUMEMPROF_ALERT_JSON (docs/alerts.md), at most once per
// second per alert type, never waited for (nor reaped: it is not our child). The program never
// sees the command as its child and never gets its output (hidden_child.h): that goes to
// alert_command.log in the run directory.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alerts.h"
#include "owned_dir.h"
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
  // Where the commands' stdout and stderr go (appended): `name` in `dir`, which must outlive this;
  // /dev/null until set.
  void set_output(const OwnedDir& dir, std::string name) {
    output_dir_ = &dir;
    output_name_ = std::move(name);
  }

 private:
  // The output file, opened afresh for each command; -1 when it cannot be.
  int open_output() const;

  std::vector<std::string> argv_;
  std::array<uint64_t, 5> last_start_ns_{};
  const OwnedDir* output_dir_ = nullptr;
  std::string output_name_;
};

}  // namespace gmp
