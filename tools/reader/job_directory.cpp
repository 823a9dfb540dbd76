#include "job_directory.h"

#include <dirent.h>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "run_directory_files.h"
#include "trace_reader.h"

namespace gmp::reader {
namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The subdirectories of `dir` in name order (so a job's listing does not depend on readdir's
// order), and, with their error, the entries that could not be examined (a symlink loop, a
// directory we may not search): any of them may be a run that a gate must not skip.
std::vector<JobMember> subdirectories(const std::string& dir) {
  std::vector<JobMember> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    JobMember m;
    m.path = dir + "/" + name;
    struct stat st {};
    if (stat(m.path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // gone since, or a symlink to nothing: no run there
      m.error = "cannot examine " + m.path + ": " + std::strerror(errno);
    } else if (!S_ISDIR(st.st_mode)) {
      continue;
    }
    out.push_back(std::move(m));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const JobMember& a, const JobMember& b) { return a.path < b.path; });
  return out;
}

void find_runs(const std::string& dir, int depth, std::vector<JobMember>& runs) {
  for (JobMember& sub : subdirectories(dir)) {
    // A directory we cannot list and search may be a run (another user's, mode 000): unreadable,
    // never taken for an empty directory.
    if (sub.error.empty() && access(sub.path.c_str(), R_OK | X_OK) != 0) {
      sub.error = "cannot read directory " + sub.path + ": " + std::strerror(errno);
    }
    if (!sub.error.empty() || looks_like_run_directory(sub.path)) {
      runs.push_back(std::move(sub));
    } else if (depth > 1) {
      find_runs(sub.path, depth - 1, runs);
    }
  }
}

auto order_key(const JobMember& m) {
  const ManifestRecord* man = m.run ? &m.run->manifest : nullptr;
  const std::optional<uint64_t> rank = man != nullptr && man->rank ? man->rank : rank_in_name(m.path);
  return std::make_tuple(!rank, rank.value_or(0), man != nullptr ? man->host : std::string(),
                         man != nullptr ? man->pid.value_or(0) : 0, m.path);
}

}  // namespace

bool looks_like_run_directory(const std::string& path) {
  struct stat st {};
  return stat((path + "/" + kManifestFile).c_str(), &st) == 0 || has_trace(path);
}

std::optional<uint64_t> rank_in_name(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  const size_t digits = std::min(name.find_first_not_of("0123456789", 4), name.size());
  if (!name.starts_with("rank") || digits == 4 || digits > 4 + 18 || digits == name.size() || name[digits] != '.') {
    return std::nullopt;
  }
  return std::stoull(name.substr(4, digits - 4));
}

std::vector<JobMember> find_run_directories(const std::string& root) {
  std::vector<JobMember> found;
  find_runs(root.size() > 1 && root.back() == '/' ? root.substr(0, root.size() - 1) : root, kJobSearchDepth, found);
  return found;
}

std::optional<std::vector<JobMember>> open_job_directory(const std::string& root, std::string& error) {
  if (!is_directory(root)) {
    error = root + " is not a directory";
    return std::nullopt;
  }
  if (access(root.c_str(), R_OK | X_OK) != 0) {
    error = "cannot read directory " + root + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<JobMember> members = find_run_directories(root);
  if (members.empty()) {
    error = root + " holds no gpumemprof run directory (none with a manifest.json or trace.gmpt, " +
            std::to_string(kJobSearchDepth) + " levels down)";
    return std::nullopt;
  }
  for (JobMember& m : members) {
    if (m.error.empty()) m.run = open_run_directory(m.path, m.error);
  }
  std::stable_sort(members.begin(), members.end(),
                   [](const JobMember& a, const JobMember& b) { return order_key(a) < order_key(b); });
  return members;
}

}  // namespace gmp::reader
