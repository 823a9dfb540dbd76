// A file the profiler keeps open for appending (trace.gmpt, attribution.jsonl, gpumemprof.log,
// .reserve), guarded against the program's descriptor games (docs/architecture.md, "Staying out of
// the program's way"). The program may dup2() its own file onto our descriptor number, or close
// every descriptor above 2 (closefrom) and open its own files on the freed numbers. So the
// descriptor is never trusted: before each write, fstat() checks that it still refers to the file
// we created (same device and inode). When it does not, the number is the program's now: we
// neither write to it nor close it, and reopen our file by its name in our directory (openat with
// O_NOFOLLOW; the same inode holding exactly the bytes we wrote, since a new file can get a freed
// inode's number). Our descriptors also live at high numbers (high_fd.h), out of the way of
// programs that dup2() onto low ones.
// A file that was removed (its run directory deleted under us) is not written any more: the bytes
// would go to a file no one can read, so the loss is reported like any failed write.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "owned_dir.h"

namespace gmp {

class OwnedFile {
 public:
  OwnedFile() = default;
  ~OwnedFile();
  OwnedFile(const OwnedFile&) = delete;
  OwnedFile& operator=(const OwnedFile&) = delete;

  // Creates `name` in `dir` (mode 0600, close-on-exec, never through a symlink, never blocking)
  // for appending, or with `in_place` for rewriting at fixed offsets (a file of fixed size, made
  // so by allocate(): live.bin). `exclusive`: fail if it exists. `dir` must outlive this file.
  // False with errno set.
  bool create(const OwnedDir& dir, const std::string& name, bool exclusive, bool in_place = false);
  bool is_open() const { return fd_ >= 0; }
  // As messages name it.
  const std::string& path() const { return path_; }

  // Appends all of `data` to our file, after checking the descriptor is still ours, or nothing (a
  // partial write is cut off again). False with errno set when the file cannot be written (ENOENT:
  // it was removed, or the program took our descriptor and the file cannot be reached again).
  bool append(const void* data, size_t size);
  // The descriptor to write at an offset with (in-place files), checked as append() checks it and
  // reopened when the program took it over; -1 with errno set.
  int checked_fd() { return usable(); }
  // Gives the file `bytes` of disk (posix_fallocate, zeros where unsupported): 0 or the error.
  int allocate(uint64_t bytes);
  // Closes our descriptor (never one the program took over); the file stays.
  void close();
  // How often the program had taken our descriptor over and the file was reopened.
  unsigned reopened() const { return reopened_; }

 private:
  enum class Held { Ours, Removed, Lost };  // Lost: the descriptor is not ours any more
  Held held() const;
  bool reopen();
  // The descriptor, reopened if the program took it; -1 with errno set.
  int usable();

  const OwnedDir* dir_ = nullptr;
  std::string name_, path_;
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  off_t size_ = 0;  // what we have written: only we append to our files
  bool in_place_ = false;
  unsigned reopened_ = 0;
};

}  // namespace gmp
