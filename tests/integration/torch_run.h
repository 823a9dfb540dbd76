// Python programs on the fake torch (tests/fake_torch) under `gpumemprof run` or the documented
// LD_PRELOAD + PYTHONPATH route: the framework bridge's and the categories' integration tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace gmp::test {

std::string first_python();    // "" when no CPython 3.10-3.13 was found (tests/test_pythons.cmake)
std::string bootstrap_dir();   // the bootstrap beside the built shim
std::string fake_torch_dir();  // build/tests/fake_torch/python
std::string slurp(const std::string& path);
std::vector<std::string> lines_with(const std::string& text, const std::string& needle);

// `gpumemprof run` (the bootstrap put on PYTHONPATH by the command), or the shim preloaded by hand
// with the bootstrap first on PYTHONPATH, as docs/framework-bridge.md says.
enum class Route { Run, Preload };

struct TorchRun {
  RunResult result;
  std::string dir;      // the run directory, empty when there is none
  nlohmann::json fake;  // the program's last line: the fake torch's own figures
  nlohmann::json summary;
  std::string log;  // gpumemprof.log
};

struct Options {
  std::map<std::string, std::string> env;
  Route route = Route::Run;
  std::vector<std::string> python_flags;
  std::string python = first_python();
  std::string script = "torch_workload.py";  // in tests/fake_torch
};

// Runs `script SCENARIO` in `box`; the run directory under box/runs.
TorchRun run_torch(const Sandbox& box, const std::string& scenario, Options o = {});

}  // namespace gmp::test
