// `gpumemprof top`'s full-screen view (ncurses, docs/live.md, "Keys"): the table refreshed every
// interval, a selection, a sort column, pause, and the detail of one process.
#pragma once

#include <time.h>

#include <cstdint>
#include <functional>
#include <string>

#include "live_reader.h"

namespace gmp::tool::top {

struct ScreenOptions {
  double interval_s = 1.0;
  std::string source;  // what the reader reads, for the empty table's line ("the registry R", "ROOT")
  // run --live: the command's state for the status line, asked at each refresh; none for top.
  std::function<std::string()> command_status;
};

// Runs until `q`. Returns the exit status, or -1 (nothing drawn) when the terminal cannot be
// driven (no TERM, an unknown one): `why` says so, for the caller to fall back to one table.
int run_screen(reader::LiveReader& reader, const ScreenOptions& options, std::string& why);

// The clock `id` (CLOCK_REALTIME: the live files' times; CLOCK_MONOTONIC: refresh deadlines), in ns.
uint64_t clock_ns(clockid_t id);

// "host H  2 processes  20:45:01": the start of the header line, shared with --once.
std::string header_text(size_t processes, uint64_t now_ns);

}  // namespace gmp::tool::top
