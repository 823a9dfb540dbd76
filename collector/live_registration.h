// This process's entry in the registry of live processes (format/live_registry.h): a symbolic link
// PID.START_TICKS -> the run directory, in a directory of ours that no one else may enter. Made
// and removed by the collector thread; the directory is reached again by path each time (the
// program may close any descriptor we would keep), and refused unless it passes the checks.
#pragma once

#include <cstdint>
#include <string>

namespace gmp {

class LiveRegistration {
 public:
  // Enters `run_dir` (absolute) under `registry` (its path). Added; Refused: the registry exists
  // but is not ours alone (another user made it first, or it is open to others); Unavailable: it
  // could not be made or written (a read-only /tmp). `error` says which and why.
  enum class Result { Added, Refused, Unavailable };
  Result add(const std::string& registry, uint64_t pid, uint64_t start_ticks, const std::string& run_dir,
             std::string& error);
  // Removes the entry, when there is one.
  void remove();
  bool added() const { return added_; }

 private:
  std::string registry_, name_;
  bool added_ = false;
};

}  // namespace gmp
