// The job view (docs/report.md §Jobs): the run directories of a job's processes (reader::
// open_job_directory) side by side, one row per process and device, the spread of the peaks across
// them and which rank ran out of memory first. Built from each run's summary.json (or the summary
// rebuilt from its trace when the process was killed), never from a replay of its own, so a job of
// many ranks reads in the time its summaries take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job_directory.h"

namespace gmp::analysis {

// One device of one process. Times are ns since that process's profiler started, as summary.json's.
struct JobRow {
  size_t member = 0;  // index into JobAnalysis::members
  int device = -1;    // -1: the process allocated no device memory (the row says so)
  std::string device_name;
  uint64_t allocated_peak = 0, allocated_peak_ns = 0;
  uint64_t reserved_peak = 0, reserved_peak_ns = 0;
  // The framework level (docs/report.md, "Two levels"), where the bridge attached on this device:
  // tensors' allocated and the caching allocator's reserved peaks.
  bool framework = false;
  uint64_t tensors_peak = 0, tensors_peak_ns = 0;
  uint64_t framework_reserved_peak = 0, framework_reserved_peak_ns = 0;
};

// Which figure a spread is of; kSpreadFigures lists them in the order the outputs show them.
enum class SpreadFigure { AllocatedPeak, ReservedPeak, TensorsPeak, FrameworkReservedPeak };
struct SpreadFigureName {
  SpreadFigure figure;
  const char* key;    // in --json: "allocated_peak", ...
  const char* label;  // in the text: "allocated peak", ...
};
extern const SpreadFigureName kSpreadFigures[4];
uint64_t spread_value(const JobRow& row, SpreadFigure f);

// A figure across the rows that have it (the framework's only where it attached), when at least two do.
struct Spread {
  SpreadFigure figure;
  size_t highest = 0, lowest = 0;  // rows; the first in job order among equals
  size_t rows = 0;                 // how many rows it was taken over
};

// An out-of-memory failure of one process, placed on the job's clock.
struct JobOom {
  size_t member = 0;
  SummaryFailure failure;  // the first one summary.json lists with CUDA_ERROR_OUT_OF_MEMORY
  uint64_t wall_ns = 0;    // the manifest's start_realtime_ns + failure.at_ns
};

struct JobAnalysis {
  std::string root;
  // What else the root holds, when it holds the runs of several jobs and this is the latest
  // (reader::choose_job()); "" when nothing.
  std::string left_out;
  std::vector<reader::JobMember> members;  // in job order (rank, host, pid), opened or with their error
  size_t opened = 0;
  uint64_t start_realtime_ns = 0;  // the earliest start among the opened manifests; 0 when none says
  std::vector<JobRow> rows;        // by member, then device
  std::vector<Spread> spreads;     // in kSpreadFigures order, those at least two rows have
  // Processes with an out-of-memory failure of known time, earliest on the wall clock first: the
  // first failed first. A process with failures but none timed (summary.json lists only the first
  // 100 failures, and those may all be other errors) or without a start time (no manifest.json) is
  // counted in its row, not placed here.
  std::vector<JobOom> ooms;

  // ns from the job's start to `at_ns` of `member`'s clock; at_ns itself when a start is unknown.
  uint64_t job_time(size_t member, uint64_t at_ns) const;
};

// Opens `root` as a job; nullopt with a one-line `error` when it is not one (not a directory, or
// no run directory in it). Members that cannot be opened stay listed, with their error.
std::optional<JobAnalysis> analyze_job(const std::string& root, std::string& error);
// The same over members already opened, in job order (the unit tests build them in memory).
JobAnalysis analyze_job_members(const std::string& root, std::vector<reader::JobMember> members);

// "rank 3" for a process with a rank, else "pid 1234"; for a directory that could not be read, the
// rank its name gives, else its name.
std::string member_label(const reader::JobMember& m);

// The --json form (docs/report.md §Jobs).
nlohmann::json job_json(const JobAnalysis& job);

}  // namespace gmp::analysis
