#include "live_registration.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "live_registry.h"

namespace gmp {
namespace {

// The registry's directory, made private where missing; -1 with `error` set, and `refused` when
// it is there but not ours alone (someone else made it first, or opened it up): our run
// directories are not listed there.
int open_registry(const std::string& path, bool create, std::string& error, bool& refused) {
  refused = false;
  if (create && ::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    error = "cannot create " + path + ": " + std::strerror(errno);
    return -1;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    refused = errno == ELOOP || errno == ENOTDIR;  // a symlink or a file in its place
    error = "cannot open " + path + ": " + (refused ? "not a directory" : std::strerror(errno));
    return -1;
  }
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0 || !live::private_directory(st, geteuid(), why)) {
    refused = !why.empty();
    error = path + " is refused: " + (why.empty() ? std::strerror(errno) : why);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

LiveRegistration::Result LiveRegistration::add(const std::string& registry, uint64_t pid, uint64_t start_ticks,
                                               const std::string& run_dir, std::string& error) {
  bool refused = false;
  const int dir = open_registry(registry, true, error, refused);
  if (dir < 0) return refused ? Result::Refused : Result::Unavailable;
  const std::string name = live::registry_entry_name(pid, start_ticks);
  // An entry of this very name is this process's own from before an exec: replaced.
  if (::symlinkat(run_dir.c_str(), dir, name.c_str()) != 0 && errno == EEXIST) {
    ::unlinkat(dir, name.c_str(), 0);
    (void)::symlinkat(run_dir.c_str(), dir, name.c_str());  // judged just below
  }
  const bool ok = [&] {
    struct stat st {};
    return fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
  }();
  if (!ok) error = "cannot add " + registry + "/" + name + ": " + std::strerror(errno);
  ::close(dir);
  if (!ok) return Result::Unavailable;
  registry_ = registry;
  name_ = name;
  added_ = true;
  return Result::Added;
}

void LiveRegistration::remove() {
  if (!added_) return;
  added_ = false;
  std::string ignored;
  bool refused = false;
  const int dir = open_registry(registry_, false, ignored, refused);
  if (dir < 0) return;
  ::unlinkat(dir, name_.c_str(), 0);
  ::close(dir);
}

}  // namespace gmp
