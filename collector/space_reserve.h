// Space and a descriptor held back in the run directory for summary.json (docs/run-directory.md,
// "When writing fails"): `.reserve`, kBytes allocated when the run directory is created and kept
// open, then closed and removed just before summary.json is written, so that the exact figures
// still reach the disk when it filled up during the run, and still get a descriptor when the
// program used up its RLIMIT_NOFILE. The first summary written gives both back for good: a process
// that carries on after that (an exec that failed) writes its later summary without them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "owned_dir.h"
#include "owned_file.h"

namespace gmp {

class SpaceReserve {
 public:
  static constexpr uint64_t kBytes = 64 << 10;  // a summary of several devices and 100 failed allocations
  static constexpr const char* kFileName = ".reserve";

  // Allocates .reserve in `dir` (kBytes, or RLIMIT_FSIZE when that is lower). When even that
  // fails, nothing of a run could be written in `dir`: `error` says why, and the caller removes
  // the directory, new and empty.
  bool take(const OwnedDir& dir, std::string& error);
  // Gives the space and the descriptor back, then writes `name` in `dir` atomically (file_io.h).
  // False with errno set.
  bool write_file(const OwnedDir& dir, const std::string& name, std::string_view content);

 private:
  OwnedFile file_;  // .reserve while it is held
  bool held_ = false;
};

}  // namespace gmp
