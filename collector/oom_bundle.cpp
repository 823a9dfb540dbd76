#include "oom_bundle.h"

#include <dirent.h>
#include <fcntl.h>
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

bool write_new_file(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool ok = write_all(fd, content.data(), content.size());
  return (::close(fd) == 0) && ok;
}

// Removes a bundle directory: its plain files, then itself. Anything else inside is left alone
// (and then the directory stays), so a planted symlink or subdirectory is never followed.
bool remove_bundle(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return false;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    const std::string file = path + "/" + name;
    if (lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) unlink(file.c_str());
  }
  closedir(d);
  return rmdir(path.c_str()) == 0;
}

}  // namespace

bool ensure_bundle_dir(const std::string& dir, std::string& error, uid_t self) {
  const PathParts parts = split_last_component(dir);
  Fd parent = open_trusted_dir(parts.parent, self, error);
  struct stat st {};
  Fd oom;
  if (parent) oom = open_or_make_entry(parent.get(), parts.parent, parts.name, 0700, self, st, error);
  if (!oom) {
    error = "cannot open OOM directory " + dir + ": " + error;
    return false;
  }
  if (S_ISLNK(st.st_mode)) {  // even our own: the bundles' directory is used as named
    error = "OOM directory " + dir + " is a symlink; not following it";
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    error = "OOM directory " + dir + " exists and is not a directory";
    return false;
  }
  if (!may_write_into(oom.get(), dir, self, error)) {
    error = "cannot open OOM directory " + dir + ": " + error;
    return false;
  }
  return true;
}

std::optional<std::string> write_bundle(const std::string& dir, const std::string& name,
                                        const std::vector<BundleFile>& files, std::string& error) {
  const std::string tmp = dir + "/.tmp." + name;
  const std::string final_path = dir + "/" + name;
  if (mkdir(tmp.c_str(), 0700) != 0) {
    error = "cannot create " + tmp + ": " + std::strerror(errno);
    return std::nullopt;
  }
  for (const auto& f : files) {
    if (!write_new_file(tmp + "/" + f.name, text_of(f))) {
      error = "cannot write " + tmp + "/" + f.name + ": " + std::strerror(errno);
      remove_bundle(tmp);
      return std::nullopt;
    }
  }
  // rename() of a directory never follows a symlink at the target: it fails instead.
  if (rename(tmp.c_str(), final_path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + final_path + ": " + std::strerror(errno);
    remove_bundle(tmp);
    return std::nullopt;
  }
  return final_path;
}

bool rewrite_bundle_file(const std::string& bundle, const BundleFile& file) {
  return write_file_atomic(bundle + "/" + file.name, text_of(file));
}

std::vector<std::string> apply_retention(const std::string& dir, uint64_t max_dumps, uint64_t max_bytes,
                                         const std::string& keep, uid_t owner) {
  struct Bundle {
    std::string path;
    struct timespec mtime;
    uint64_t bytes;
  };
  std::vector<Bundle> bundles;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return {};
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(kOomBundlePrefix, 0) != 0) continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != owner) continue;
    Bundle b{path, st.st_mtim, 0};
    if (DIR* inner = opendir(path.c_str())) {
      while (dirent* f = readdir(inner)) {
        struct stat fst {};
        if (lstat((path + "/" + f->d_name).c_str(), &fst) == 0 && S_ISREG(fst.st_mode)) b.bytes += fst.st_size;
      }
      closedir(inner);
    }
    bundles.push_back(b);
  }
  closedir(d);
  std::sort(bundles.begin(), bundles.end(), [](const Bundle& a, const Bundle& b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
    if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec < b.mtime.tv_nsec;
    return a.path < b.path;
  });
  uint64_t count = bundles.size(), total = 0;
  for (const auto& b : bundles) total += b.bytes;
  std::vector<std::string> removed;
  for (const auto& b : bundles) {
    if (count <= max_dumps && total <= max_bytes) break;
    if (b.path == keep) continue;
    if (remove_bundle(b.path)) {
      removed.push_back(b.path);
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
