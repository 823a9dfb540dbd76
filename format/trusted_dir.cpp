#include "trusted_dir.h"

#include <fcntl.h>
#include <limits.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace gmp {
namespace {

constexpr int kMaxSymlinks = 40;  // the kernel's limit for one path

// Pushes the components of `path` onto `stack` so that the first is at the back (walked next);
// empty and "." components are dropped.
void push_components(const std::string& path, std::vector<std::string>& stack) {
  std::vector<std::string> parts;
  for (size_t start = 0; start <= path.size();) {
    const size_t end = std::min(path.find('/', start), path.size());
    if (end > start && path.compare(start, end - start, ".") != 0) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  stack.insert(stack.end(), parts.rbegin(), parts.rend());
}

// The target of the symlink `link` (opened O_PATH | O_NOFOLLOW, described by `st`, shown as
// `shown`), read from that very descriptor so that it cannot be swapped after the owner check.
bool trusted_link_target(const Fd& link, const struct stat& st, const std::string& shown, uid_t self,
                         std::string& target, std::string& error) {
  if (st.st_uid != 0 && st.st_uid != self) {
    error = "'" + shown + "' is a symlink owned by uid " + std::to_string(st.st_uid) + ", neither root nor uid " +
            std::to_string(self) + "; not following it";
    return false;
  }
  char buf[PATH_MAX];
  const ssize_t n = readlinkat(link.get(), "", buf, sizeof buf);
  if (n <= 0 || static_cast<size_t>(n) == sizeof buf) {
    error = "cannot read symlink '" + shown + "': " + (n < 0 ? std::strerror(errno) : "target too long or empty");
    return false;
  }
  target.assign(buf, static_cast<size_t>(n));
  return true;
}

// Opens the walk's starting directory ("/" or "."), judged like every directory after it.
Fd open_start(const std::string& shown, uid_t self, std::string& error) {
  Fd dir(open(shown.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct stat st {};
  if (!dir || fstat(dir.get(), &st) != 0) {
    error = "cannot open '" + shown + "': " + std::strerror(errno);
    return Fd();
  }
  if (!trusted_owner(st, shown, self, error)) return Fd();
  return dir;
}

}  // namespace

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir == ".") return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool trusted_owner(const struct stat& st, const std::string& shown, uid_t self, std::string& error) {
  if (st.st_uid == 0 || st.st_uid == self) return true;
  error = "'" + shown + "' is a directory owned by uid " + std::to_string(st.st_uid) + ", neither root nor uid " +
          std::to_string(self) + "; not writing below it";
  return false;
}

PathParts split_last_component(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return {".", p};
  return {slash == 0 ? "/" : p.substr(0, slash), p.substr(slash + 1)};
}

bool may_write_into(int dirfd, const std::string& shown, uid_t self, std::string& error) {
  struct stat st {};
  if (fstat(dirfd, &st) != 0) {
    error = "cannot examine '" + shown + "': " + std::strerror(errno);
    return false;
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0 && st.st_uid != self) {
    error = "'" + shown + "' is world-writable without the sticky bit and owned by uid " + std::to_string(st.st_uid) +
            "; not writing into it";
    return false;
  }
  return true;
}

Fd open_or_make_entry(int dirfd, const std::string& dir_shown, const std::string& name, mode_t mode, uid_t self,
                      struct stat& st, std::string& error, bool create) {
  const std::string shown = join_path(dir_shown, name);
  Fd fd(openat(dirfd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && errno == ENOENT && create) {
    if (!may_write_into(dirfd, dir_shown, self, error)) return Fd();
    if (mkdirat(dirfd, name.c_str(), mode) != 0 && errno != EEXIST) {
      error = "cannot create '" + shown + "': " + std::strerror(errno);
      return Fd();
    }
    fd.reset(openat(dirfd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!fd || fstat(fd.get(), &st) != 0) {
    error = "cannot open '" + shown + "': " + std::strerror(errno);
    return Fd();
  }
  return fd;
}

Fd open_trusted_dir(const std::string& path, uid_t self, std::string& error, bool create) {
  std::string shown = !path.empty() && path[0] == '/' ? "/" : ".";
  Fd dir = open_start(shown, self, error);
  if (!dir) return Fd();
  std::vector<std::string> todo;
  push_components(path, todo);
  int links = 0;
  while (!todo.empty()) {
    const std::string name = std::move(todo.back());
    todo.pop_back();
    struct stat st {};
    Fd next = open_or_make_entry(dir.get(), shown, name, 0777, self, st, error, create);
    if (!next) return Fd();
    const std::string here = join_path(shown, name);
    if (S_ISDIR(st.st_mode)) {
      if (!trusted_owner(st, here, self, error)) return Fd();
      dir = std::move(next);
      shown = here;
      continue;
    }
    if (!S_ISLNK(st.st_mode)) {
      error = "'" + here + "' is not a directory";
      return Fd();
    }
    if (++links > kMaxSymlinks) {
      error = "too many symlinks at '" + here + "'";
      return Fd();
    }
    // The target is walked next, from the link's directory or, when absolute, from the root.
    std::string target;
    if (!trusted_link_target(next, st, here, self, target, error)) return Fd();
    push_components(target, todo);
    if (target[0] == '/') {
      shown = "/";
      dir = open_start(shown, self, error);
      if (!dir) return Fd();
    }
  }
  return dir;
}

}  // namespace gmp
