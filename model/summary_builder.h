// build_summary(): summary.json's typed form (format/summary.h) filled from an Accounting state.
// The collector builds it at exit and adds what only it knows (SummaryContext); the tools build it
// again from a trace whose process left no summary.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "accounting.h"
#include "summary.h"

namespace gmp {

struct SummaryContext {
  bool clean_exit = true;
  std::string ended_by = kEndedByExit;  // Summary::ended_by
  int terminated_by_signal = 0;
  std::optional<int> exit_status;  // Summary::exit_status
  uint64_t events_lost = 0;
  uint64_t producer_waits = 0;
  std::map<int, std::string> device_names;
  uint64_t start_monotonic_ns = 0;
};

Summary build_summary(const Accounting& acc, const SummaryContext& ctx);

}  // namespace gmp
