#include "torch_run.h"

#include <dirent.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace gmp::test {

std::string first_python() {
  const auto all = test_pythons();
  return all.empty() ? std::string() : all.front();
}

std::string bootstrap_dir() {
  const std::string shim = Paths::shim();
  return shim.substr(0, shim.rfind('/')) + "/gpumemprof/python";
}

std::string fake_torch_dir() { return GMP_FAKE_TORCH_DIR; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

TorchRun run_torch(const Sandbox& box, const std::string& scenario, Options o) {
  const std::string runs = box.dir() + "/runs";
  // The program's own PYTHONPATH (a test may add a directory) comes after the fake torch.
  const std::string own = o.env.count("PYTHONPATH") != 0 ? ":" + o.env["PYTHONPATH"] : "";
  std::vector<std::string> argv;
  if (o.route == Route::Run) {
    argv = {Paths::tool(), "run", "-o", runs, "--"};
    o.env["LD_PRELOAD"] = "<unset>";
    o.env["GPUMEMPROF_OUTPUT"] = "<unset>";
    o.env["PYTHONPATH"] = fake_torch_dir() + own;
  } else {
    o.env["GPUMEMPROF_OUTPUT"] = runs + "/run.%p";
    o.env["PYTHONPATH"] = bootstrap_dir() + ":" + fake_torch_dir() + own;
  }
  argv.push_back(o.python);
  argv.insert(argv.end(), o.python_flags.begin(), o.python_flags.end());
  argv.push_back(std::string(GMP_SOURCE_DIR) + "/tests/fake_torch/" + o.script);
  argv.push_back(scenario);
  TorchRun r;
  r.result = box.run(argv, o.env);
  std::vector<std::string> dirs;
  if (DIR* d = opendir(runs.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') dirs.push_back(runs + "/" + e->d_name);
    }
    closedir(d);
  }
  EXPECT_LE(dirs.size(), 1u);
  if (dirs.size() == 1) {
    r.dir = dirs.front();
    r.summary = read_json_file(r.dir + "/summary.json");
    r.log = slurp(r.dir + "/gpumemprof.log");
  }
  const std::string& out = r.result.out;
  const size_t last = out.rfind('\n', out.size() >= 2 ? out.size() - 2 : 0);
  r.fake = nlohmann::json::parse(out.substr(last == std::string::npos ? 0 : last + 1), nullptr, false);
  return r;
}

}  // namespace gmp::test
