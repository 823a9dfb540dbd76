#include "process_facts.h"

#include <string.h>  // sigabbrev_np
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "program_name.h"
#include "summary.h"

namespace gmp::analysis {

std::string signal_abbreviation(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : std::string();
}

std::string ProcessEnd::ended_by() const {
  switch (how) {
    case How::Exit: return kEndedByExit;
    case How::ExitCall: return kEndedByExitCall;
    case How::Signal: return kEndedBySignal;
    case How::Exec: return kEndedByExec;
    case How::Unknown: return kEndedByUnknown;
    case How::Running: return "running";
  }
  return kEndedByUnknown;
}

std::string ProcessEnd::text() const {
  switch (how) {
    case How::Exit:
      return exit_status.value_or(0) == 0 ? "the process exited normally"
                                          : "the process exited with status " + std::to_string(*exit_status);
    case How::ExitCall:
      return exit_status.value_or(0) == 0
                 ? "the process exited through _exit (no exit handlers ran)"
                 : "the process exited through _exit with status " + std::to_string(*exit_status) +
                       " (no exit handlers ran)";
    case How::Signal: {
      const std::string name = signal_abbreviation(signal);
      return "the process was killed by " +
             (name.empty() ? "signal " + std::to_string(signal) : name + " (signal " + std::to_string(signal) + ")");
    }
    case How::Exec: return "the process replaced itself by exec (the new program has its own run directory)";
    case How::Unknown: return "the process died without writing summary.json (killed by SIGKILL, or a crash)";
    case How::Running: return "the process is still running: these are the figures of its trace so far";
  }
  return "?";
}

std::string ProcessEnd::live_at_end() const {
  if (exited()) return "leaks";
  if (how == How::Running) return "live so far";
  return died() ? "live when the process died" : "live when the process called exec";
}

ProcessEnd process_end(const reader::RunDirectory& run) {
  const Summary& s = run.figures;
  ProcessEnd end;
  end.signal = static_cast<int>(s.terminated_by_signal);
  if (run.summary_rebuilt) {
    end.how = still_running(run.manifest) ? ProcessEnd::How::Running : ProcessEnd::How::Unknown;
  } else if (s.ended_by == kEndedByExitCall) {
    end.how = ProcessEnd::How::ExitCall;
  } else if (s.ended_by == kEndedByExec) {
    end.how = ProcessEnd::How::Exec;
  } else if (s.ended_by == kEndedBySignal || s.terminated_by_signal != 0) {  // older summaries: no ended_by
    end.how = ProcessEnd::How::Signal;
  } else if (s.ended_by == kEndedByExit || s.clean_exit) {
    end.how = ProcessEnd::How::Exit;
  } else {
    end.how = ProcessEnd::How::Unknown;
  }
  if (end.exited()) end.exit_status = s.exit_status;
  return end;
}

bool still_running(const ManifestRecord& manifest) {
  char host[256] = {};
  if (!manifest.pid || manifest.start_realtime_ns == 0 || gethostname(host, sizeof host - 1) != 0 ||
      manifest.host != host) {
    return false;
  }
  // /proc/PID/stat's 22nd field: the start in clock ticks since boot (after "(comm)", which may hold
  // spaces); /proc/stat's btime: the boot in seconds since the epoch.
  std::ifstream stat("/proc/" + std::to_string(*manifest.pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line) || line.rfind(')') == std::string::npos) return false;
  std::istringstream fields(line.substr(line.rfind(')') + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  std::ifstream boot("/proc/stat");
  uint64_t btime = 0;
  for (std::string word; boot >> word;) {
    if (word == "btime" && boot >> btime) break;
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (btime == 0 || ticks <= 0 || field.empty() || field.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const uint64_t started_ns = (btime * 1'000'000'000ull) + std::stoull(field) * (1'000'000'000ull / ticks);
  // btime is whole seconds and the ticks hundredths: a second of slack.
  return started_ns <= manifest.start_realtime_ns + 1'000'000'000ull;
}

nlohmann::json process_end_json(const ProcessEnd& end) {
  return {{"ended_by", end.ended_by()},
          {"signal", end.how == ProcessEnd::How::Signal ? nlohmann::json(end.signal) : nlohmann::json()},
          {"exit_status", end.exit_status ? nlohmann::json(*end.exit_status) : nlohmann::json()},
          {"died", end.died()},
          {"text", end.text()}};
}

std::string program_title(const ManifestRecord& manifest) {
  if (manifest.exe.empty()) return "?";
  const ProgramName p = program_name(manifest.exe, manifest.argv.value_or(std::vector<std::string>{}));
  return p.python ? p.display() : manifest.exe;
}

}  // namespace gmp::analysis
