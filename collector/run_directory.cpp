#include "run_directory.h"

#include "file_io.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace gmp {

std::string expand_output_template(const std::string& tpl, const ProcessInfo& info) {
  std::string out;
  for (size_t i = 0; i < tpl.size(); ++i) {
    if (tpl[i] != '%' || i + 1 == tpl.size()) {
      out += tpl[i];
      continue;
    }
    switch (tpl[++i]) {
      case 'e': out += info.exe_name; break;
      case 'p': out += std::to_string(info.pid); break;
      case 'h': out += info.host; break;
      case 'r': out += info.rank; break;
      case 't': out += utc_timestamp(info.start_realtime_ns); break;
      case '%': out += '%'; break;
      default: out += '%'; out += tpl[i]; break;
    }
  }
  return out;
}


std::optional<std::string> create_run_directory(const std::string& path, std::string& error) {
  if (!make_parent_dirs(path)) {
    error = "cannot create parent directories of '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  for (int n = 0; n < 100000; ++n) {
    const std::string candidate = n == 0 ? path : path + "." + std::to_string(n);
    if (mkdir(candidate.c_str(), 0700) == 0) return candidate;
    if (errno != EEXIST) {
      error = "cannot create run directory '" + candidate + "': " + std::strerror(errno);
      return std::nullopt;
    }
  }
  error = "no free run directory name for '" + path + "'";
  return std::nullopt;
}

}  // namespace gmp
