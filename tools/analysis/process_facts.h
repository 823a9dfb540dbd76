// How a profiled process is named and how it ended, as every command says it (report, html, the
// launcher's summary): one wording for all of them.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "run_directory_reader.h"

namespace gmp::analysis {

// How the process ended (docs/run-directory.md, summary.json's "ended_by").
struct ProcessEnd {
  enum class How {
    Exit,      // exit() or a return from main
    ExitCall,  // _exit, _Exit or quick_exit: no exit handlers ran
    Signal,    // a fatal signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT) with its default action
    Exec,      // replaced its image (the new one has its own run directory)
    Unknown,   // no summary.json: SIGKILL, or a crash the profiler could not catch
    Running,   // no summary.json, and the process is alive on this host (not a later one with its pid)
  };
  How how = How::Exit;
  int signal = 0;  // How::Signal: its number
  std::optional<int> exit_status;  // Exit, ExitCall: summary.json's "exit_status", when the shim saw it
  // The process did not end by its own choice: what was live then is not a leak it made.
  bool died() const { return how == How::Signal || how == How::Unknown; }
  bool exited() const { return how == How::Exit || how == How::ExitCall; }  // what it left live are leaks
  // summary.json's word: "exit", "exit_call", "signal", "exec", "unknown"; "running" for a live process
  std::string ended_by() const;
  // One sentence: "the process exited normally", "the process exited with status 3", "the process
  // was killed by SIGABRT (signal 6)", ...
  std::string text() const;
  // What to call the device memory still live at its end: "leaks" after an exit, "live when the
  // process died", "live when the process called exec", "live so far" while it runs.
  std::string live_at_end() const;
};

ProcessEnd process_end(const reader::RunDirectory& run);
// Whether the process a manifest describes is alive on this host: its pid exists and that process
// started no later than the profiler did in it (a pid reused by a later process is not it).
bool still_running(const ManifestRecord& manifest);
// "SIGTERM": the signal's name as glibc spells it, empty for a number it has none for.
std::string signal_abbreviation(int sig);
// report --json's and the HTML page's "process_end": {"ended_by", "signal" (null unless killed by
// one), "exit_status" (null unless known), "died", "text"}.
nlohmann::json process_end_json(const ProcessEnd& end);

// The program in titles: a Python interpreter's script or module (`train.py`, `-m pkg.mod`), else
// the executable's path; "?" without a manifest.
std::string program_title(const ManifestRecord& manifest);

}  // namespace gmp::analysis
