// Reaching the directories we write into (the run directory's parent, the OOM directory, the
// metrics directory) without letting another user redirect us (docs/run-directory.md, "Symlinks
// and ownership"). The path is walked one component at a time with openat(O_PATH | O_NOFOLLOW) and
// each step judged on the descriptor it opened, so nothing can be swapped between the check and
// the use; the caller then keeps the descriptor and works through it (owned_dir.h), never through
// the path again. Refused:
// - a symlink owned by neither root nor `self` (the rule of the kernel's fs.protected_symlinks,
//   applied everywhere): someone else's symlink is not followed;
// - a directory on the way (the starting one included) owned by neither root nor `self`, as
//   OpenSSH refuses for the paths of its keys: its owner could rename what lies below it;
// - writing into (creating an entry in) a directory that is world-writable without the sticky bit
//   and not ours: anyone could rename what we create there.
// Symlinks owned by root or by `self` (/var/run -> /run, a user's own links) are followed, their
// targets walked by the same rules. `self` is our effective uid; tests pass another.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <unistd.h>

#include <string>
#include <utility>

namespace gmp {

// A descriptor, closed when this goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// A path cut at its last '/': {"/a/b", "c"} for "/a/b/c", {".", "c"} for "c", {"/", "c"} for
// "/c". Trailing slashes are ignored.
struct PathParts {
  std::string parent, name;
};
PathParts split_last_component(const std::string& path);

// Opens directory `path` (O_PATH), creating missing components with mode 0777 less the umask
// (none with `create` false: a missing one is an error); a relative path starts at the working
// directory. Returns the descriptor, or none with `error` naming the component refused or failing.
Fd open_trusted_dir(const std::string& path, uid_t self, std::string& error, bool create = true);

// Whether directory `st` (named `shown`) may be on our way: owned by root or `self`.
bool trusted_owner(const struct stat& st, const std::string& shown, uid_t self, std::string& error);

// Whether we may create entries in directory `dirfd` (named `shown` in the error).
bool may_write_into(int dirfd, const std::string& shown, uid_t self, std::string& error);

// Opens entry `name` of `dirfd` (named `dir_shown`) with O_PATH | O_NOFOLLOW, creating it as a
// directory with `mode` when missing (once may_write_into allows it; never with `create` false);
// `st` describes what was opened, a symlink included. None, with `error`, when it can be neither
// opened nor created.
Fd open_or_make_entry(int dirfd, const std::string& dir_shown, const std::string& name, mode_t mode, uid_t self,
                      struct stat& st, std::string& error, bool create = true);

// `name` inside `dir` as messages show it: "a" inside ".", "/a" inside "/", "d/a" inside "d".
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace gmp
