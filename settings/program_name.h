// The program a process runs, as its user names it: for a Python interpreter the script or module
// it was given (`python3.12 train.py` is `train.py`, `python -m pkg.mod` is `-m pkg.mod`), for
// anything else the executable. The run directory's %e (docs/configuration.md) and the tools'
// titles use it, so that every Python run is not called `python3.12`.
#pragma once

#include <string>
#include <vector>

namespace gmp {

struct ProgramName {
  std::string name;     // "train.py", "pkg.mod", else the executable's basename ("unknown" when empty)
  bool module = false;  // name is a module given with -m
  bool python = false;  // the executable is a Python interpreter and name is what it runs
  std::string display() const { return module ? "-m " + name : name; }  // "train.py", "-m pkg.mod"
};

// From the executable's path (or basename) and the process's argv (argv[0] the interpreter's).
ProgramName program_name(const std::string& exe, const std::vector<std::string>& argv);

}  // namespace gmp
