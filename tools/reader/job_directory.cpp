#include "job_directory.h"

#include <dirent.h>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
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

std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

// `root` as its members' paths begin: without a trailing slash ("/" stays).
std::string without_trailing_slash(const std::string& root) {
  return root.size() > 1 && root.back() == '/' ? root.substr(0, root.size() - 1) : root;
}

// What makes runs one job (choose_job()): "" for a member that could not be read.
std::string job_key(const JobMember& m) {
  if (!m.run) return "";
  const ManifestRecord& man = m.run->manifest;
  if (!man.invocation.empty()) return "run " + man.invocation;
  if (!man.job_id.empty()) return "job " + man.job_id;
  return "dir " + parent_of(m.path);
}

struct Group {
  std::vector<size_t> members;
  uint64_t start_ns = 0;  // the earliest start among them; 0 when none says
  std::string start_utc, exe, dir;  // dir: where they all lie, "" when not one directory
};

// "2 processes of `gpumemprof run` (train.py) started 2026-11-28T12:00:00.000Z in /tmp/a"
std::string group_text(const std::string& key, const Group& g) {
  const size_t n = g.members.size();
  std::string out = std::to_string(n) + (n == 1 ? " process" : " processes");
  if (key.starts_with("run ")) out += " of one `gpumemprof run`";
  if (key.starts_with("job ")) out += " of job " + key.substr(4);
  if (!g.exe.empty()) out += " (" + g.exe + ")";
  if (!g.start_utc.empty()) out += " started " + g.start_utc;
  return out;
}

uint64_t changed_ns(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_mtim.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(st.st_mtim.tv_nsec);
}

}  // namespace

std::optional<std::vector<JobMember>> choose_job(const std::string& root, std::vector<JobMember> members,
                                                 std::string& left_out, std::string& error) {
  left_out.clear();
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string key = job_key(members[i]);
    if (key.empty()) continue;
    Group& g = groups[key];
    const ManifestRecord& man = members[i].run->manifest;
    if (g.members.empty()) g.dir = parent_of(members[i].path);
    if (g.dir != parent_of(members[i].path)) g.dir.clear();
    g.members.push_back(i);
    if (man.start_realtime_ns != 0 && (g.start_ns == 0 || man.start_realtime_ns < g.start_ns)) {
      g.start_ns = man.start_realtime_ns;
      g.start_utc = man.start_time_utc;
      g.exe = man.exe.substr(man.exe.rfind('/') + 1);
    }
  }
  if (groups.size() <= 1) return members;
  const std::string top = without_trailing_slash(root);
  const bool side_by_side = std::all_of(groups.begin(), groups.end(), [&](const auto& g) { return g.second.dir == top; });
  if (!side_by_side) {
    error = top + " holds the runs of " + std::to_string(groups.size()) +
            " different jobs; give the directory of the one to read:";
    std::vector<std::pair<uint64_t, std::string>> lines;
    for (const auto& [key, g] : groups) {
      const std::string where = g.dir.empty() || g.dir == top ? members[g.members.front()].path : g.dir;
      lines.push_back({g.start_ns, "\n  " + where + "  " + group_text(key, g)});
    }
    std::sort(lines.begin(), lines.end());
    for (const auto& line : lines) error += line.second;
    return std::nullopt;
  }
  auto latest = groups.begin();
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    if (it->second.start_ns > latest->second.start_ns) latest = it;
  }
  std::vector<bool> keep(members.size(), false);
  for (size_t i : latest->second.members) keep[i] = true;
  size_t others = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (!members[i].run) keep[i] = changed_ns(members[i].path) >= latest->second.start_ns;
    if (!keep[i]) ++others;
  }
  left_out = top + " also holds " + std::to_string(others) + (others == 1 ? " run directory" : " run directories") +
             " of " + std::to_string(groups.size() - 1) + (groups.size() == 2 ? " earlier job" : " earlier jobs") +
             ", not read here: this is the latest, " + group_text(latest->first, latest->second) +
             "; give one run directory to read an earlier one";
  std::vector<JobMember> chosen;
  for (size_t i = 0; i < members.size(); ++i) {
    if (keep[i]) chosen.push_back(std::move(members[i]));
  }
  return chosen;
}

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
  find_runs(without_trailing_slash(root), kJobSearchDepth, found);
  return found;
}

std::optional<std::vector<JobMember>> open_job_directory(const std::string& root, std::string& error,
                                                         std::string* left_out) {
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
  if (left_out != nullptr) return choose_job(root, std::move(members), *left_out, error);
  return members;
}

}  // namespace gmp::reader
