#include "live_registry.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>

namespace gmp::live {

std::string registry_dir(const std::string& configured, uid_t uid) {
  if (!configured.empty()) return configured;
  return "/tmp/gpumemprof-" + std::to_string(uid);
}

std::string registry_entry_name(uint64_t pid, uint64_t start_ticks) {
  return std::to_string(pid) + "." + std::to_string(start_ticks);
}

std::optional<RegistryEntry> parse_registry_entry_name(const std::string& name) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == name.size()) return std::nullopt;
  RegistryEntry e;
  const char* end = name.data() + name.size();
  auto [p1, ec1] = std::from_chars(name.data(), name.data() + dot, e.pid);
  if (ec1 != std::errc() || p1 != name.data() + dot) return std::nullopt;
  auto [p2, ec2] = std::from_chars(name.data() + dot + 1, end, e.start_ticks);
  if (ec2 != std::errc() || p2 != end) return std::nullopt;
  return e;
}

bool private_directory(const struct stat& st, uid_t uid, std::string& why) {
  if (!S_ISDIR(st.st_mode)) {
    why = "not a directory";
    return false;
  }
  if (st.st_uid != uid) {
    why = "owned by uid " + std::to_string(st.st_uid) + ", not " + std::to_string(uid);
    return false;
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    why = std::string("mode ") + mode + ": others may read or enter it (0700 is needed)";
    return false;
  }
  return true;
}

std::optional<uint64_t> process_start_ticks(uint64_t pid) {
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%llu/stat", static_cast<unsigned long long>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces or ')': fields count from the
  // last ')'; field 3 follows it, so field 22 comes after 19 more.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return std::nullopt;
  ++p;
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') ++p;
    while (*p != ' ' && *p != '\0') ++p;
    if (*p == '\0') return std::nullopt;
  }
  while (*p == ' ') ++p;
  uint64_t ticks = 0;
  auto [end, ec] = std::from_chars(p, buf + n, ticks);
  if (ec != std::errc()) return std::nullopt;
  return ticks;
}

}  // namespace gmp::live
