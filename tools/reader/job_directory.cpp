#include "job_directory.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <tuple>

#include "run_directory_files.h"
#include "trace_reader.h"

namespace gmp::reader {
namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Subdirectories of `dir` in name order (so a job's listing does not depend on readdir's order).
std::vector<std::string> subdirectories(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    if (is_directory(path)) out.push_back(path);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void find_runs(const std::string& dir, int depth, std::vector<std::string>& runs) {
  for (const std::string& sub : subdirectories(dir)) {
    if (looks_like_run_directory(sub)) {
      runs.push_back(sub);
    } else if (depth > 1) {
      find_runs(sub, depth - 1, runs);
    }
  }
}

auto order_key(const JobMember& m) {
  const ManifestRecord* man = m.run ? &m.run->manifest : nullptr;
  return std::make_tuple(man == nullptr || !man->rank, man != nullptr ? man->rank.value_or(0) : 0,
                         man != nullptr ? man->host : std::string(), man != nullptr ? man->pid.value_or(0) : 0, m.path);
}

}  // namespace

bool looks_like_run_directory(const std::string& path) {
  struct stat st {};
  return stat((path + "/" + kManifestFile).c_str(), &st) == 0 || has_trace(path);
}

std::vector<std::string> find_run_directories(const std::string& root) {
  std::vector<std::string> paths;
  find_runs(root.size() > 1 && root.back() == '/' ? root.substr(0, root.size() - 1) : root, kJobSearchDepth, paths);
  return paths;
}

std::optional<std::vector<JobMember>> open_job_directory(const std::string& root, std::string& error) {
  if (!is_directory(root)) {
    error = root + " is not a directory";
    return std::nullopt;
  }
  const std::vector<std::string> paths = find_run_directories(root);
  if (paths.empty()) {
    error = root + " holds no gpumemprof run directory (none with a manifest.json or trace.gmpt, " +
            std::to_string(kJobSearchDepth) + " levels down)";
    return std::nullopt;
  }
  std::vector<JobMember> members;
  for (const std::string& p : paths) {
    JobMember m;
    m.path = p;
    m.run = open_run_directory(p, m.error);
    members.push_back(std::move(m));
  }
  std::stable_sort(members.begin(), members.end(),
                   [](const JobMember& a, const JobMember& b) { return order_key(a) < order_key(b); });
  return members;
}

}  // namespace gmp::reader
