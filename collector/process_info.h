// Gathers the facts about the profiled process (process_record.h) that name its run directory and
// fill its manifest.
#pragma once

#include <cstdint>
#include <string>

#include "process_record.h"

namespace gmp {

ProcessInfo current_process_info();
std::string utc_timestamp(uint64_t realtime_ns);  // YYYYmmddTHHMMSSZ
std::string iso8601_utc(uint64_t realtime_ns);    // YYYY-mm-ddTHH:MM:SS.mmmZ

}  // namespace gmp
