// A file the profiler keeps open for appending (trace.gmpt, attribution.jsonl, gpumemprof.log),
// guarded against the program's descriptor games (docs/architecture.md, "Staying out of the
// program's way"). The program may dup2() its own file onto our descriptor number, or close every
// descriptor above 2 (closefrom) and open its own files on the freed numbers. So the descriptor
// is never trusted: before each write, fstat() checks that it still refers to the file we created
// (same device and inode). When it does not, the number is the program's now: we neither write to
// it nor close it, and reopen our file by its path (O_NOFOLLOW; the same inode holding exactly the
// bytes we wrote, since a new file can get a freed inode's number). Our
// descriptors also live at high numbers, out of the way of programs that dup2() onto low ones.
// A file that was removed (its run directory deleted under us) is not written any more: the bytes
// would go to a file no one can read, so the loss is reported like any failed write.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace gmp {

class OwnedFile {
 public:
  OwnedFile() = default;
  ~OwnedFile();
  OwnedFile(const OwnedFile&) = delete;
  OwnedFile& operator=(const OwnedFile&) = delete;

  // Creates `path` (mode 0600, close-on-exec, never through a symlink) for appending. `exclusive`:
  // fail if it exists. False with errno set.
  bool create(const std::string& path, bool exclusive);
  bool is_open() const { return fd_ >= 0; }

  // Appends all of `data` to our file, after checking the descriptor is still ours, or nothing (a
  // partial write is cut off again). False with errno set when the file cannot be written (ENOENT:
  // it was removed, or the program took our descriptor and the file cannot be reached again).
  bool append(const void* data, size_t size);
  // How often the program had taken our descriptor over and the file was reopened.
  unsigned reopened() const { return reopened_; }

 private:
  enum class Held { Ours, Removed, Lost };  // Lost: the descriptor is not ours any more
  Held held() const;
  bool reopen();

  std::string path_;
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  off_t size_ = 0;  // what we have written: only we append to our files
  unsigned reopened_ = 0;
};

}  // namespace gmp
