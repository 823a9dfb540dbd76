// A directory the profiler writes into (the run directory, the OOM and metrics directories), held
// by the descriptor of the directory that was checked (trusted_dir.h), so that every file is
// created, renamed and removed with openat(), renameat() and unlinkat() in that very directory.
// Its path is looked up again for nothing: a directory renamed, or swapped for a symlink, by
// whoever can write into its parent still gets our files, and a removed one gets none (the kernel
// refuses new entries in it); we never create it again behind the user's back.
//
// Like OwnedFile, the descriptor is not trusted to stay ours: the program may close it
// (closefrom) or dup2() over its number. Before each use, fstat() checks that it still is our
// directory (device and inode); when it is not, the number is the program's and is never closed,
// and the directory is reached again by walking its path by the rules of trusted_dir.h, without
// creating anything, and taken only when it is the same directory.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>

#include "trusted_dir.h"

namespace gmp {

class OwnedDir {
 public:
  OwnedDir() = default;
  ~OwnedDir();
  OwnedDir(const OwnedDir&) = delete;
  OwnedDir& operator=(const OwnedDir&) = delete;

  // Takes `fd`, a directory reached at `path` (absolute, or relative to a working directory that
  // will not change: tests) by our uid `self`. False with errno set when `fd` cannot be examined.
  bool adopt(Fd fd, const std::string& path, uid_t self);
  // Walks `path` by the rules of trusted_dir.h (creating what is missing when `create`) and takes
  // the directory. False with `error` set.
  bool open(const std::string& path, uid_t self, std::string& error, bool create);
  bool is_open() const { return adopted_; }
  // Lets the directory go (its descriptor closed, unless the program took the number over).
  void close();

  // The descriptor to use with the *at() calls, checked to still be our directory; -1 with errno
  // set (ENOENT) when it cannot be reached any more. Any thread.
  int fd() const;
  const std::string& path() const { return path_; }
  // `name` inside it, as messages show it.
  std::string shown(const std::string& name) const { return join_path(path_, name); }
  uid_t self() const { return self_; }

 private:
  bool ours(int fd) const;
  int reopen(int lost) const;

  mutable std::atomic<int> fd_{-1};  // -1 once lost
  bool adopted_ = false;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uid_t self_ = 0;
  std::string path_;
};

}  // namespace gmp
