// Space held back in the run directory for summary.json (docs/run-directory.md, "When writing
// fails"): `.reserve`, kBytes allocated when the run directory is created and removed just before
// summary.json is written, so that the exact figures still reach the disk when it filled up during
// the run. The first summary written gives the space back for good: a process that carries on
// after that (an exec that failed) writes its later summary without it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gmp {

class SpaceReserve {
 public:
  static constexpr uint64_t kBytes = 64 << 10;  // a summary of several devices and 100 failed allocations
  static constexpr const char* kFileName = ".reserve";

  // Allocates <dir>/.reserve (kBytes, or RLIMIT_FSIZE when that is lower). When even that fails,
  // nothing of a run could be written in `dir`: the directory, new and empty, is removed and
  // `error` says why.
  bool take(const std::string& dir, std::string& error);
  // Gives the space back, then writes `path` atomically (file_io.h). False with errno set.
  bool write_file(const std::string& path, std::string_view content);

 private:
  std::string path_;  // of .reserve while it is held
};

}  // namespace gmp
