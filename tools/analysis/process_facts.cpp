#include "process_facts.h"

#include <signal.h>

#include "program_name.h"
#include "summary.h"

namespace gmp::analysis {
namespace {

// The abbreviations of the signals a process can die of; others go by number.
std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(sig);
  }
}

}  // namespace

std::string ProcessEnd::ended_by() const {
  switch (how) {
    case How::Exit: return kEndedByExit;
    case How::ExitCall: return kEndedByExitCall;
    case How::Signal: return kEndedBySignal;
    case How::Exec: return kEndedByExec;
    case How::Unknown: return kEndedByUnknown;
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
      const std::string name = signal_name(signal);
      return "the process was killed by " + name + (name.starts_with("SIG") ? " (signal " + std::to_string(signal) + ")" : "");
    }
    case How::Exec: return "the process replaced itself by exec (the new program has its own run directory)";
    case How::Unknown:
      return "the process died without writing summary.json (killed by SIGKILL, a crash, or still running)";
  }
  return "?";
}

std::string ProcessEnd::live_at_end() const {
  if (exited()) return "leaks";
  return died() ? "live when the process died" : "live when the process called exec";
}

ProcessEnd process_end(const reader::RunDirectory& run) {
  const Summary& s = run.figures;
  ProcessEnd end;
  end.signal = static_cast<int>(s.terminated_by_signal);
  if (run.summary_rebuilt) {
    end.how = ProcessEnd::How::Unknown;
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
