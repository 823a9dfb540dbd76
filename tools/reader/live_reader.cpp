#include "live_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <tuple>

#include "job_directory.h"
#include "live_registry.h"
#include "run_directory_files.h"

namespace gmp::reader {
namespace {

std::string read_small_file(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[128];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

bool ended(Liveness l) { return l != Liveness::Running; }

}  // namespace

const char* liveness_name(Liveness l) {
  switch (l) {
    case Liveness::Running: return "running";
    case Liveness::Exited: return "exited";
    case Liveness::Signalled: return "killed";
    case Liveness::Exec: return "exec";
    case Liveness::Dead: return "dead";
  }
  return "dead";
}

ThisMachine this_machine() {
  ThisMachine m;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.host = host;
  m.boot_id = read_small_file("/proc/sys/kernel/random/boot_id");
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) == 0) m.pid_namespace = st.st_ino;
  return m;
}

Liveness liveness_of(const live::LiveFile& f, const ThisMachine& here, uint64_t now_ns) {
  switch (static_cast<live::State>(f.state)) {
    case live::State::Exited: return Liveness::Exited;
    case live::State::Signalled: return Liveness::Signalled;
    case live::State::Exec: return Liveness::Exec;
    default: break;  // Running, or a value of a later version: judged as running
  }
  // /proc answers only for processes of our machine, boot and PID namespace; an empty boot id or
  // host on either side (no /proc) proves nothing.
  const bool here_too = !here.host.empty() && !here.boot_id.empty() && here.pid_namespace != 0 &&
                        live::text_of(f.host) == here.host && live::text_of(f.boot_id) == here.boot_id &&
                        f.pid_namespace == here.pid_namespace;
  if (here_too) {
    const std::optional<uint64_t> ticks = live::process_start_ticks(f.pid);
    return ticks && *ticks == f.start_ticks ? Liveness::Running : Liveness::Dead;
  }
  return now_ns > f.heartbeat_realtime_ns && now_ns - f.heartbeat_realtime_ns > live::kStaleNs ? Liveness::Dead
                                                                                               : Liveness::Running;
}

LiveReader::LiveReader(LiveSources sources, ThisMachine here) : sources_(std::move(sources)), here_(std::move(here)) {}

void LiveReader::discover_registry(LiveScan& scan) {
  const std::string& dir = sources_.registry;
  registry_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (registry_fd_ < 0) {
    // No registry yet: no profiled process has run under this user (not an error).
    if (errno != ENOENT) scan.error = "cannot read the registry " + dir + ": " + std::strerror(errno);
    return;
  }
  struct stat st {};
  std::string why;
  if (fstat(registry_fd_, &st) != 0) {
    why = std::strerror(errno);
  } else if (!live::private_directory(st, geteuid(), why)) {
    why += "; another user could plant entries there";
  }
  if (!why.empty()) {
    // Entries of a directory others may write could point us at anything: not read at all.
    scan.error = "not reading the registry " + dir + ": " + why;
    ::close(registry_fd_);
    registry_fd_ = -1;
    return;
  }
  const int list_fd = ::dup(registry_fd_);
  DIR* d = list_fd < 0 ? nullptr : fdopendir(list_fd);
  if (d == nullptr) {
    if (list_fd >= 0) ::close(list_fd);
    scan.error = "cannot read the registry " + dir + ": " + std::strerror(errno);
    return;
  }
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!live::parse_registry_entry_name(name)) continue;  // not an entry of ours
    auto target = entry_targets_.find(name);
    if (target == entry_targets_.end()) {
      // A name carries its process's start ticks, so its target never changes: read once.
      char buf[PATH_MAX];
      const ssize_t n = readlinkat(registry_fd_, name.c_str(), buf, sizeof buf - 1);
      if (n <= 0 || buf[0] != '/') continue;  // not a symlink to an absolute path: not ours
      target = entry_targets_.emplace(name, std::string(buf, static_cast<size_t>(n))).first;
    }
    Known& k = known_[target->second];
    k.registry_entry = name;
  }
  closedir(d);
}

bool LiveReader::discover_root(uint64_t now_ns) {
  const std::string& root = *sources_.root;
  struct stat st {};
  if (stat(root.c_str(), &st) != 0) return false;
  // A scan of the tree costs a stat per directory: done again when ROOT itself changed (a new run
  // directory under it) and every few seconds (a new one deeper down).
  constexpr uint64_t kRescanNs = 5'000'000'000;
  if (mtime_ns(st) == root_mtime_ns_ && now_ns - last_root_scan_ns_ < kRescanNs) return false;
  root_mtime_ns_ = mtime_ns(st);
  last_root_scan_ns_ = now_ns;
  std::string path = root.size() > 1 && root.back() == '/' ? root.substr(0, root.size() - 1) : root;
  if (::access((path + "/" + kLiveFile).c_str(), F_OK) == 0) {
    known_[path];
    return true;
  }
  for (const JobMember& m : find_run_directories(path)) {
    if (!m.error.empty()) continue;  // what we may not read holds no live file we may read
    if (sources_.skip.count(m.path) != 0) continue;
    if (::access((m.path + "/" + kLiveFile).c_str(), F_OK) == 0) known_[m.path];
  }
  return true;
}

void LiveReader::update(const std::string& run_dir, Known& k, uint64_t now_ns) {
  k.problem.clear();
  k.gone = false;
  const std::string path = run_dir + "/" + kLiveFile;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    // No live.bin: a run of an older version, or one removed since. Shown no more.
    if (errno != ENOENT) k.problem = path + ": " + std::strerror(errno);
    k.gone = errno == ENOENT;
    k.file.reset();
    k.seen = k.settled = false;
    return;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    k.problem = path + ": " + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    k.problem = path + ": not a regular file";
  } else if (st.st_uid != geteuid()) {
    // Another user's figures are theirs; and a file they own could be rewritten under us.
    k.problem = path + ": owned by uid " + std::to_string(st.st_uid) + ", not " + std::to_string(geteuid());
  }
  if (!k.problem.empty()) {
    ::close(fd);
    k.file.reset();
    k.seen = false;
    return;
  }
  const bool same_file = k.seen && st.st_dev == k.dev && st.st_ino == k.ino;
  // Settled (ended, or dead by /proc): its figures are final. A Dead by heartbeat is read again
  // only when the file changed (its writer on another machine may come back).
  if (same_file && (k.settled || (k.liveness == Liveness::Dead && mtime_ns(st) == k.mtime_ns))) {
    ::close(fd);
    return;
  }
  auto snapshot = std::make_shared<live::LiveFile>();
  const live::ReadResult r = live::read_live_file(fd, *snapshot);
  ++files_read_;
  ::close(fd);
  if (r == live::ReadResult::NotLive) {
    k.problem = path + ": not a live file of this version (bad magic, version or size)";
    k.file.reset();
    k.seen = false;
    return;
  }
  if (r == live::ReadResult::Failed) {
    k.problem = path + ": " + std::strerror(errno);
    return;  // the last snapshot, if any, stays shown
  }
  const Liveness l = liveness_of(*snapshot, here_, now_ns);
  if (r == live::ReadResult::Torn) {
    // A writer stopped mid-publish. Its process killed then: the last copy is all there will be,
    // shown marked dead (the header's identity is written once, so the liveness check holds). Still
    // alive (preempted): the last consistent snapshot stays, and the next refresh tries again.
    if (l != Liveness::Dead) return;
    k.torn = true;
  } else {
    k.torn = false;
  }
  k.dev = st.st_dev;
  k.ino = st.st_ino;
  k.mtime_ns = mtime_ns(st);
  k.file = std::move(snapshot);
  k.seen = true;
  k.hidden = false;
  k.liveness = r == live::ReadResult::Torn ? Liveness::Dead : l;
  // Dead by /proc never comes back; dead by heartbeat might (a stalled machine's writer).
  const bool by_proc = l == Liveness::Dead && live::text_of(k.file->host) == here_.host &&
                       live::text_of(k.file->boot_id) == here_.boot_id &&
                       k.file->pid_namespace == here_.pid_namespace;
  k.settled = (ended(k.liveness) && k.liveness != Liveness::Dead) || by_proc;
}

void LiveReader::remove_entry(Known& k) {
  if (registry_fd_ < 0 || k.registry_entry.empty()) return;
  // The entry is named by pid and start ticks, so it is this process's and nobody else's.
  if (unlinkat(registry_fd_, k.registry_entry.c_str(), 0) == 0) ++entries_removed_;
  entry_targets_.erase(k.registry_entry);
  k.registry_entry.clear();
}

LiveScan LiveReader::refresh(uint64_t now_ns) {
  LiveScan scan;
  bool rescanned = false;
  if (sources_.root) {
    struct stat st {};
    if (stat(sources_.root->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      scan.error = *sources_.root + " is not a directory";
      return scan;
    }
    rescanned = discover_root(now_ns);
  } else {
    // Which run directories the registry names is this listing's to say: an entry gone since (its
    // process exited, another reader removed it) names nothing.
    for (auto& [_, k] : known_) k.registry_entry.clear();
    discover_registry(scan);
    if (!scan.error.empty()) return scan;
  }
  for (auto it = known_.begin(); it != known_.end();) {
    Known& k = it->second;
    if (k.settled && k.hidden) {
      // Over and final: not even looked at, until the registry no longer names it (then
      // forgotten) or a search of ROOT finds its directory again (then checked: a new file?).
      if (!sources_.root && k.registry_entry.empty()) {
        it = known_.erase(it);
        continue;
      }
      if (!rescanned) {
        ++it;
        continue;
      }
    }
    update(it->first, k, now_ns);
    if (!k.problem.empty()) scan.unreadable.push_back(k.problem);
    if (!k.file) {
      // No live.bin (any more): forgotten unless the registry still names it (its process may not
      // have written it yet). Otherwise an ended process hidden since, or one not readable now.
      if (k.gone && k.registry_entry.empty()) {
        it = known_.erase(it);
        continue;
      }
      ++it;
      continue;
    }
    const uint64_t beat = k.file->heartbeat_realtime_ns;
    const bool recent = beat + sources_.keep_ns >= now_ns;
    if (k.liveness != Liveness::Running && !recent) {
      // Over: its entry goes (another reader may have taken it already), and unless --all its
      // snapshot too; the run directory stays known, so a scan that finds it again reads nothing.
      remove_entry(k);
      if (!sources_.all) {
        k.hidden = true;
        k.file.reset();  // a few bytes per ended process, not a snapshot
        ++it;
        continue;
      }
    }
    scan.processes.push_back({it->first, k.file, k.liveness, k.torn});
    ++it;
  }
  if (registry_fd_ >= 0) {
    ::close(registry_fd_);
    registry_fd_ = -1;
  }
  auto key = [](const LiveProcess& p) {
    return std::make_tuple(p.file->rank < 0, p.file->rank, p.file->pid, p.run_dir);
  };
  std::sort(scan.processes.begin(), scan.processes.end(),
            [&](const LiveProcess& a, const LiveProcess& b) { return key(a) < key(b); });
  return scan;
}

}  // namespace gmp::reader
