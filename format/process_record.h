// The profiled process as manifest.json and an OOM bundle's environment.json describe it. Filled
// by the collector (collector/process_info.h); only the record lives here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gmp {

struct ProcessInfo {
  int pid = 0;
  int ppid = 0;
  std::string exe;       // resolved /proc/self/exe
  std::string exe_name;  // its basename
  std::vector<std::string> argv;  // with secrets redacted (redact.h)
  std::string host;
  std::string rank;      // RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; "0" when none
  std::string cwd;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  int cuda_driver_version = 0;  // cuDriverGetVersion; 0 when unknown
};

}  // namespace gmp
