#include "run_directory.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log.h"
#include "program_name.h"
#include "trusted_dir.h"

namespace gmp {
namespace {

// %j: a job id is the launcher's text, so a '/' in it would make directories of its own.
std::string job_id_text(const JobIdentity& job) {
  if (job.job_id.empty()) return "nojob";
  std::string out = job.job_id;
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

}  // namespace

std::string expand_output_template(const std::string& tpl, const ProcessInfo& info) {
  std::string out, kept;  // `kept`: the sequences that are not placeholders, for the warning
  for (size_t i = 0; i < tpl.size(); ++i) {
    if (tpl[i] != '%') {
      out += tpl[i];
      continue;
    }
    if (i + 1 == tpl.size()) {
      out += '%';
      kept += std::string(kept.empty() ? "" : ", ") + "'%' at the end";
      continue;
    }
    switch (tpl[++i]) {
      case 'e': out += program_name(info.exe_name, info.argv).name; break;  // a Python script's own name
      case 'p': out += std::to_string(info.pid); break;
      case 'h': out += info.host; break;
      case 'r': out += info.rank; break;
      case 'R': if (info.job.rank) out += "rank" + std::to_string(*info.job.rank) + "."; break;
      case 'j': out += job_id_text(info.job); break;
      case 't': out += utc_timestamp(info.start_realtime_ns); break;
      case '%': out += '%'; break;
      default:
        out += tpl.substr(i - 1, 2);
        kept += (kept.empty() ? "'" : ", '") + tpl.substr(i - 1, 2) + "'";
        break;
    }
  }
  if (!kept.empty()) {
    log::warn("GPUMEMPROF_OUTPUT '{}': not placeholders, kept as written: {}; accepted: %e %p %h %r %R %j %t %%", tpl,
              kept);
  }
  return out;
}

std::optional<CreatedDir> create_run_directory(const std::string& path, std::string& error, uid_t self) {
  const PathParts parts = split_last_component(path);
  const std::string base = path.substr(0, path.find_last_not_of('/') + 1);  // "runs/x/" is "runs/x"
  Fd parent = open_trusted_dir(parts.parent, self, error);
  if (!parent || !may_write_into(parent.get(), parts.parent, self, error)) {
    error = "cannot create run directory '" + path + "': " + error;
    return std::nullopt;
  }
  for (int n = 0; n < 100000; ++n) {
    const std::string suffix = n == 0 ? "" : "." + std::to_string(n);
    const std::string name = parts.name + suffix;
    if (mkdirat(parent.get(), name.c_str(), 0700) == 0) {
      // Opened at once, by the name we just made in the directory we checked, and taken only if it
      // is still the one we made (ours): every file of the run is made through this descriptor,
      // wherever the path leads later (owned_dir.h).
      Fd dir(openat(parent.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      struct stat st {};
      if (!dir || fstat(dir.get(), &st) != 0 || st.st_uid != geteuid()) {
        error = "cannot open run directory '" + base + suffix + "' just created: " +
                (dir ? std::string("it changed owner") : std::string(std::strerror(errno)));
        return std::nullopt;
      }
      return CreatedDir{base + suffix, std::move(dir), std::move(parent), name, st.st_dev, st.st_ino};
    }
    if (errno != EEXIST) {
      error = "cannot create run directory '" + base + suffix + "': " + std::strerror(errno);
      return std::nullopt;
    }
  }
  error = "no free run directory name for '" + path + "'";
  return std::nullopt;
}

void remove_created_dir(const CreatedDir& created) {
  struct stat named {};
  if (fstatat(created.parent.get(), created.name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 ||
      named.st_dev != created.dev || named.st_ino != created.ino) {
    return;  // renamed or replaced meanwhile: not ours to remove by that name
  }
  unlinkat(created.parent.get(), created.name.c_str(), AT_REMOVEDIR);
}

}  // namespace gmp
