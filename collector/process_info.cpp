#include "process_info.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>

#include "clock.h"
#include "launcher_env.h"
#include "redact.h"

namespace gmp {
namespace {

std::vector<std::string> read_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  size_t start = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == '\0') {
      argv.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  }
  return argv;
}

std::string format_utc(uint64_t realtime_ns, const char* fmt) {
  time_t secs = static_cast<time_t>(realtime_ns / 1'000'000'000ull);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[64];
  strftime(buf, sizeof buf, fmt, &utc);
  return buf;
}

}  // namespace

ProcessInfo current_process_info() {
  ProcessInfo p;
  p.pid = getpid();
  p.ppid = getppid();
  struct stat ns {};
  if (stat("/proc/self/ns/pid", &ns) == 0) p.pid_namespace = ns.st_ino;
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) p.exe.assign(buf, static_cast<size_t>(n));
  auto slash = p.exe.rfind('/');
  p.exe_name = slash == std::string::npos ? p.exe : p.exe.substr(slash + 1);
  if (p.exe_name.empty()) p.exe_name = "unknown";
  p.argv = redact_argv(read_cmdline());  // the one place argv enters: every writer gets it redacted
  if (gethostname(buf, sizeof buf) == 0) {
    buf[sizeof buf - 1] = '\0';
    p.host = buf;
  }
  p.job = job_identity([](const char* name) -> const char* { return std::getenv(name); });
  p.rank = p.job.rank ? std::to_string(*p.job.rank) : "0";
  if (getcwd(buf, sizeof buf) != nullptr) p.cwd = buf;
  p.start_realtime_ns = realtime_ns();
  p.start_monotonic_ns = now_ns();
  return p;
}

std::string utc_timestamp(uint64_t realtime_ns) { return format_utc(realtime_ns, "%Y%m%dT%H%M%SZ"); }

std::string iso8601_utc(uint64_t realtime_ns) {
  char ms[8];
  snprintf(ms, sizeof ms, ".%03uZ", static_cast<unsigned>((realtime_ns / 1'000'000ull) % 1000));
  return format_utc(realtime_ns, "%Y-%m-%dT%H:%M:%S") + ms;
}

}  // namespace gmp
