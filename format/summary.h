// summary.json (docs/run-directory.md §summary.json) from an Accounting state. Shared by the collector at exit and
// by the tools when they rebuild a summary from a trace.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "accounting.h"

namespace gmp {

struct SummaryContext {
  bool clean_exit = true;
  // How the process ended: "exit" (exit() or return from main), "exit_call" (_exit, _Exit or
  // quick_exit: no exit handlers ran), "signal", "exec" (written before the image was replaced),
  // "unknown" (a summary the tools rebuilt from the trace).
  std::string ended_by = "exit";
  int terminated_by_signal = 0;
  uint64_t events_lost = 0;
  uint64_t producer_waits = 0;
  std::map<int, std::string> device_names;
  uint64_t start_monotonic_ns = 0;
};

nlohmann::json build_summary(const Accounting& acc, const SummaryContext& ctx);

}  // namespace gmp
