#include "oom_bundle.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "file_io.h"
#include "json_text.h"
#include "oom_bundle_schema.h"
#include "redact.h"
#include "trusted_dir.h"

namespace gmp {
namespace {

std::string text_of(const BundleFile& f) { return json_text(f.content, 2) + "\n"; }

bool write_new_file(int dirfd, const std::string& name, const std::string& content) {
  const int fd = ::openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) return false;
  const bool ok = write_all(fd, content.data(), content.size());
  return (::close(fd) == 0) && ok;
}

// The entries of directory `dirfd` (a descriptor we keep; the listing uses its own), or none.
std::vector<std::string> entries_of(int dirfd) {
  std::vector<std::string> out;
  const int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? fdopendir(fd) : nullptr;
  if (d == nullptr) {
    if (fd >= 0) ::close(fd);
    return out;
  }
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  return out;
}

// Bundle `name` of `dirfd` opened for reading, when it is a directory (not a symlink) of `owner`;
// none with errno set otherwise.
Fd open_bundle(int dirfd, const std::string& name, uid_t owner) {
  Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) return Fd();
  if (st.st_uid != owner) {
    errno = EPERM;  // someone else's directory under that name
    return Fd();
  }
  return fd;
}

// The plain files of a bundle: what it holds, and what removing it removes.
std::vector<std::pair<std::string, uint64_t>> plain_files(int bundlefd) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const std::string& name : entries_of(bundlefd)) {
    struct stat st {};
    if (fstatat(bundlefd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
      out.emplace_back(name, static_cast<uint64_t>(st.st_size));
    }
  }
  return out;
}

// Removes bundle `name` of `dirfd` if it is `owner`'s: its plain files, then itself. Anything else
// inside is left alone (and then the directory stays), so a planted symlink or subdirectory is
// never followed, and what is removed is what was opened, whatever its name means meanwhile.
bool remove_bundle(int dirfd, const std::string& name, uid_t owner) {
  const Fd bundle = open_bundle(dirfd, name, owner);
  if (!bundle) return false;
  for (const auto& [file, bytes] : plain_files(bundle.get())) ::unlinkat(bundle.get(), file.c_str(), 0);
  return ::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) == 0;
}

// What every bundles' directory must be, judged on the entry just opened (`st`), before `out`
// takes it.
bool take_bundle_dir(Fd fd, const struct stat& st, const std::string& shown, uid_t self, OwnedDir& out,
                     std::string& error) {
  if (S_ISLNK(st.st_mode)) {  // even our own: the bundles' directory is used as named
    error = "OOM directory " + shown + " is a symlink; not following it";
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    error = "OOM directory " + shown + " exists and is not a directory";
    return false;
  }
  if (!trusted_owner(st, shown, self, error) || !may_write_into(fd.get(), shown, self, error)) {
    error = "cannot open OOM directory " + shown + ": " + error;
    return false;
  }
  if (!out.adopt(std::move(fd), shown, self)) {
    error = "cannot open OOM directory " + shown + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool open_bundle_dir(const std::string& dir, OwnedDir& out, std::string& error, uid_t self) {
  const PathParts parts = split_last_component(dir);
  Fd parent = open_trusted_dir(parts.parent, self, error);
  struct stat st {};
  Fd oom;
  if (parent) oom = open_or_make_entry(parent.get(), parts.parent, parts.name, 0700, self, st, error);
  if (!oom) {
    error = "cannot open OOM directory " + dir + ": " + error;
    return false;
  }
  return take_bundle_dir(std::move(oom), st, dir, self, out, error);
}

bool open_bundle_subdir(const OwnedDir& run, const std::string& name, OwnedDir& out, std::string& error) {
  const std::string shown = run.shown(name);
  const int runfd = run.fd();
  struct stat st {};
  Fd oom;
  if (runfd < 0) error = std::strerror(errno);
  else oom = open_or_make_entry(runfd, run.path(), name, 0700, run.self(), st, error);
  if (!oom) {
    error = "cannot open OOM directory " + shown + ": " + error;
    return false;
  }
  return take_bundle_dir(std::move(oom), st, shown, run.self(), out, error);
}

bool write_bundle(const OwnedDir& dir, const std::string& name, const std::vector<BundleFile>& files,
                  std::string& error) {
  // An unpredictable temporary name: another user of a shared directory cannot take it first.
  const std::string prefix = ".tmp." + name + ".";
  const int dirfd = dir.fd();
  std::string tmp;
  if (dirfd < 0 || create_unpredictable(
                       dirfd, prefix, [](int d, const char* n) { return ::mkdirat(d, n, 0700); }, tmp) < 0) {
    error = "cannot create " + dir.shown(prefix + "XXXXXX") + ": " + std::strerror(errno);
    return false;
  }
  const Fd tmpfd = open_bundle(dirfd, tmp, geteuid());
  for (const auto& f : files) {
    if (!tmpfd || !write_new_file(tmpfd.get(), f.name, text_of(f))) {
      error = "cannot write " + dir.shown(tmp) + "/" + f.name + ": " + std::strerror(errno);
      remove_bundle(dirfd, tmp, geteuid());
      return false;
    }
  }
  // Never over an existing directory (a rename of a directory never follows a symlink at the
  // target: it fails instead). Filesystems without RENAME_NOREPLACE say EINVAL.
  if (renameat2(dirfd, tmp.c_str(), dirfd, name.c_str(), RENAME_NOREPLACE) != 0 &&
      (errno != EINVAL || renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0)) {
    error = "cannot rename " + dir.shown(tmp) + " to " + dir.shown(name) + ": " + std::strerror(errno);
    remove_bundle(dirfd, tmp, geteuid());
    return false;
  }
  return true;
}

bool rewrite_bundle_file(const OwnedDir& dir, const std::string& name, const BundleFile& file) {
  const int dirfd = dir.fd();
  if (dirfd < 0) return false;
  const Fd bundle = open_bundle(dirfd, name, dir.self());
  return bundle && write_file_atomic(bundle.get(), file.name, text_of(file));
}

std::vector<std::string> apply_retention(const OwnedDir& dir, uint64_t max_dumps, uint64_t max_bytes,
                                         const std::string& keep, uid_t owner) {
  struct Bundle {
    std::string name;
    struct timespec mtime;
    uint64_t bytes;
  };
  const int dirfd = dir.fd();
  if (dirfd < 0) return {};
  std::vector<Bundle> bundles;
  for (const std::string& name : entries_of(dirfd)) {
    if (name.rfind(kOomBundlePrefix, 0) != 0) continue;
    struct stat st {};
    if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != owner) {
      continue;
    }
    Bundle b{name, st.st_mtim, 0};
    if (const Fd fd = open_bundle(dirfd, name, owner)) {
      for (const auto& [file, bytes] : plain_files(fd.get())) b.bytes += bytes;
    }
    bundles.push_back(b);
  }
  std::sort(bundles.begin(), bundles.end(), [](const Bundle& a, const Bundle& b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
    if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec < b.mtime.tv_nsec;
    return a.name < b.name;
  });
  uint64_t count = bundles.size(), total = 0;
  for (const auto& b : bundles) total += b.bytes;
  std::vector<std::string> removed;
  for (const auto& b : bundles) {
    if (count <= max_dumps && total <= max_bytes) break;
    if (b.name == keep) continue;
    if (remove_bundle(dirfd, b.name, owner)) {
      removed.push_back(dir.shown(b.name));
      --count;
      total -= b.bytes;
    }
  }
  return removed;
}

nlohmann::json redacted_environment(char** envp) {
  nlohmann::json env = nlohmann::json::object();
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(kv.substr(0, eq))] = redact_env_value(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

}  // namespace gmp
