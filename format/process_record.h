// The profiled process as manifest.json and an OOM bundle's environment.json describe it. Filled
// by the collector (collector/process_info.h); only the record lives here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gmp {

// Which rank of which job the process is, from its launcher's environment (collector/launcher_env.h).
// Set by `gpumemprof run` for the command it starts, the same for all of the command's processes:
// which of the runs in one ROOT belong together (tools/reader/job_directory.h).
inline constexpr const char* kInvocationVariable = "GPUMEMPROF_INVOCATION";

struct JobIdentity {
  std::string launcher;                  // "torchrun", "env", "openmpi", "mvapich", "pmix", "pmi", "slurm"; "": none
  std::optional<uint64_t> rank;          // nullopt: no launcher, or its value was not a number
  std::optional<uint64_t> local_rank;    // the rank among the processes on this host
  std::optional<uint64_t> world_size;    // the number of ranks in the job
  std::string job_id;                    // the scheduler's or launcher's job id; "": none
  std::string invocation;                // GPUMEMPROF_INVOCATION: the `gpumemprof run` that started it; "": none
  bool operator==(const JobIdentity&) const = default;
};

struct ProcessInfo {
  int pid = 0;
  // The inode of the process's PID namespace (/proc/self/ns/pid; 0 when unknown): what tells apart
  // two processes of one host name and one pid in different containers.
  uint64_t pid_namespace = 0;
  int ppid = 0;
  std::string exe;       // resolved /proc/self/exe
  std::string exe_name;  // its basename
  std::vector<std::string> argv;  // with secrets redacted (redact.h)
  std::string host;
  std::string rank;      // job.rank as text, "0" when none: what %r in GPUMEMPROF_OUTPUT gives
  JobIdentity job;
  std::string cwd;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  int cuda_driver_version = 0;  // cuDriverGetVersion; 0 when unknown
};

}  // namespace gmp
