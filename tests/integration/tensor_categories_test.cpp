// Memory categories end to end on the fake torch (docs/framework-bridge.md §Categories): the
// programs of tests/fake_torch/category_workload.py under `gpumemprof run`, each printing the fake's
// own ledger of categories (tests/fake_torch/python/torch/_truth.py). `report --json` must give
// exactly its bytes per category at the tensor peak and at exit, and the peak's phase; then the
// text report, `check --max-category`, `oom`, and GPUMEMPROF_CATEGORIES=0.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"
#include "torch_run.h"

namespace gmp::test {
namespace {

const char* const kCategories[] = {"parameters", "gradients", "optimizer_state", "activations",
                                   "temporaries", "kv_cache",   "other"};

class TensorCategories : public ::testing::Test {
 protected:
  void SetUp() override {
    if (first_python().empty()) GTEST_SKIP() << "no CPython 3.10-3.13 found (tests/test_pythons.cmake)";
  }
  // In `in` (a sandbox of its own for a test's second run), else the test's.
  TorchRun run(const std::string& scenario, std::map<std::string, std::string> env = {}, Sandbox* in = nullptr) {
    Options o;
    o.script = "category_workload.py";
    o.env = std::move(env);
    TorchRun r = run_torch(in != nullptr ? *in : box, scenario, o);
    EXPECT_EQ(r.result.exit_code, 0) << r.result.err;
    EXPECT_FALSE(r.dir.empty()) << r.result.err;
    EXPECT_TRUE(r.fake.is_object()) << r.result.out;
    return r;
  }
  nlohmann::json framework(const TorchRun& r) {
    RunResult rep = box.run({Paths::tool(), "report", r.dir, "--json"});
    EXPECT_EQ(rep.exit_code, 0) << rep.err;
    return nlohmann::json::parse(rep.out)["analysis"]["devices"][0]["framework"];
  }
  Sandbox box;
};

// {category: bytes} of report --json's categories_at_peak or _at_exit.
std::map<std::string, uint64_t> by_category(const nlohmann::json& split) {
  std::map<std::string, uint64_t> out;
  for (const auto& c : split["categories"]) out[c["category"].get<std::string>()] = c["bytes"].get<uint64_t>();
  return out;
}

void expect_ledger(const nlohmann::json& split, const nlohmann::json& ledger, const std::string& moment) {
  const auto got = by_category(split);
  for (const char* c : kCategories) {
    EXPECT_EQ(got.at(c), ledger[c].get<uint64_t>()) << moment << ": " << c << "\n" << split.dump(1);
  }
  EXPECT_EQ(got.at("unknown"), 0u) << moment;
}

// Each scenario: at the peak and at exit, every category's bytes are the fake's own; the peak is
// the fake's requested_bytes peak, in the phase the fake says.
class TensorCategoriesOfEachScenario : public TensorCategories, public ::testing::WithParamInterface<const char*> {};

// {category: bytes} of device 0's gpumemprof_tensor_category_bytes in the only metrics file of `dir`.
std::map<std::string, uint64_t> metrics_by_category(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  EXPECT_EQ(files.size(), 1u) << dir;
  for (const std::string& line : lines_with(files.empty() ? "" : slurp(files[0]), "gpumemprof_tensor_category_bytes{")) {
    if (line.find("device=\"0\"") == std::string::npos) continue;
    const size_t at = line.find("category=\"") + 10;
    out[line.substr(at, line.find('"', at) - at)] = std::stoull(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

TEST_P(TensorCategoriesOfEachScenario, EqualTheFakesLedgerAtThePeakAndAtExit) {
  const std::string prom = box.dir() + "/prom";
  const TorchRun r = run(GetParam(), {{"GPUMEMPROF_METRICS_DIR", prom}});
  if (r.dir.empty()) return;
  const nlohmann::json f = framework(r);
  const nlohmann::json& peak = r.fake["peak"];
  EXPECT_EQ(f["categories_at_peak"]["decided"], true);
  EXPECT_EQ(f["categories_at_peak"]["total"], peak["bytes"]);
  EXPECT_EQ(f["categories_at_peak"]["total"], r.fake["stats"]["requested_bytes.all.peak"]);
  expect_ledger(f["categories_at_peak"], peak["by_category"], "peak");
  expect_ledger(f["categories_at_exit"], r.fake["at_exit"], "exit");
  const nlohmann::json& phase = f["categories_at_peak"]["phase"];
  if (std::string(GetParam()) == "generate" || std::string(GetParam()) == "inference_plain") {
    EXPECT_TRUE(phase.is_null()) << "no training phase was ever marked";
  } else {
    EXPECT_EQ(phase["kind"], peak["phase"]);
    EXPECT_EQ(phase["step"], peak["step"]);
    EXPECT_EQ(phase["micro_batch"], peak["micro_batch"]);
  }
  // Each category's own peak is at least its share at the tensor peak.
  for (const char* c : kCategories) {
    EXPECT_GE(f["category_peaks"][c].get<uint64_t>(), peak["by_category"][c].get<uint64_t>()) << c;
  }
  // The collector's live categories at exit, in the final metrics: the same, except that a tensor
  // still held in the phase it was allocated in is not decided live (unknown), where hindsight
  // says other.
  const auto live = metrics_by_category(prom);
  for (const char* c : kCategories) {
    if (std::string(c) == "other") continue;
    EXPECT_EQ(live.at(c), r.fake["at_exit"][c].get<uint64_t>()) << c;
  }
  EXPECT_EQ(live.at("other") + live.at("unknown"), r.fake["at_exit"]["other"].get<uint64_t>());
}

INSTANTIATE_TEST_SUITE_P(Scenarios, TensorCategoriesOfEachScenario,
                         ::testing::Values("adamw", "sgd_accumulate", "checkpoint", "generate", "inference_plain",
                                           "oom_forward", "sliced_layers"));

// Hugging Face's models loop over a slice of their layers, a ModuleList made in every forward: its
// registrations of known modules must not make the bootstrap walk the parameters every step (on an
// 8-layer Llama that walk was most of the hooks' cost per step; docs/validation.md, session 42).
TEST_F(TensorCategories, ASlicedModuleListInForwardMakesNoParameterWalkDue) {
  const TorchRun r = run("sliced_layers");
  if (r.dir.empty()) return;
  EXPECT_EQ(r.fake["module_changes_in_forwards"], 0) << r.result.out;
}

TEST_F(TensorCategories, ParametersAreNamedByModulePathAndStateByParameterAndKey) {
  const TorchRun r = run("adamw");
  if (r.dir.empty()) return;
  const nlohmann::json f = framework(r);
  std::map<std::string, nlohmann::json> split;
  for (const auto& c : f["categories_at_exit"]["categories"]) split[c["category"]] = c;
  // The ledger's names: every parameter and buffer by its path from the root module.
  uint64_t named = 0;
  for (const auto& item : split["parameters"]["largest"]) {
    ASSERT_TRUE(r.fake["names"].contains(item["name"].get<std::string>())) << item.dump();
    EXPECT_EQ(item["bytes"], r.fake["names"][item["name"].get<std::string>()]);
    named += item["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(split["parameters"]["largest"][0]["name"], "layers.1.weight");
  EXPECT_EQ(split["gradients"]["largest"][0]["name"], "layers.1.weight");
  EXPECT_EQ(split["optimizer_state"]["largest"][0]["name"].get<std::string>().rfind("layers.1.weight.exp_avg", 0), 0u);
  EXPECT_GT(named, 0u);
  // The text report says the same, with the phase.
  RunResult text = box.run({Paths::tool(), "report", r.dir}, {{"COLUMNS", "160"}});
  EXPECT_NE(text.out.find("tensors by category at the tensor peak (optimizer of step 3):"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("optimizer state"), std::string::npos);
  EXPECT_NE(text.out.find("layers.1.weight.exp_avg"), std::string::npos);
}

// The perfetto export's "GPU 0 tensors by category" track: its last point is the ledger at exit, and
// each category's highest point its peak as the report gives it.
TEST_F(TensorCategories, PerfettoHasATrackOfTheTensorsByCategory) {
  const TorchRun r = run("sgd_accumulate");
  if (r.dir.empty()) return;
  const std::string file = box.dir() + "/trace.json";
  RunResult ex = box.run({Paths::tool(), "export", r.dir, "--format", "perfetto", "-o", file});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  const nlohmann::json trace = read_json_file(file);
  nlohmann::json last;
  std::map<std::string, uint64_t> highest;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("name", "") != "GPU 0 tensors by category") continue;
    EXPECT_EQ(e["ph"], "C");
    last = e["args"];
    for (const auto& [category, bytes] : e["args"].items()) {
      highest[category] = std::max(highest[category], bytes.get<uint64_t>());
    }
  }
  ASSERT_TRUE(last.is_object()) << "no category track";
  const nlohmann::json peaks = framework(r)["category_peaks"];
  for (const char* c : kCategories) {
    const uint64_t at_exit = r.fake["at_exit"][c].get<uint64_t>();
    if (peaks[c].get<uint64_t>() == 0) {
      EXPECT_FALSE(last.contains(c)) << c << ": never held memory, no track";
      continue;
    }
    EXPECT_EQ(last[c].get<uint64_t>(), at_exit) << c;
    EXPECT_EQ(highest[c], peaks[c].get<uint64_t>()) << c;
  }
}

TEST_F(TensorCategories, KvCacheIsWhatTheCacheCodeAllocated) {
  const TorchRun r = run("generate");
  if (r.dir.empty()) return;
  const auto exit = by_category(framework(r)["categories_at_exit"]);
  EXPECT_EQ(exit.at("kv_cache"), r.fake["at_exit"]["kv_cache"].get<uint64_t>());
  EXPECT_GT(exit.at("kv_cache"), 0u);
}

TEST_F(TensorCategories, OffLeavesEveryTensorUnknownSaysWhyAndChangesNothing) {
  const TorchRun on = run("adamw");
  Sandbox other, third;
  const TorchRun off = run("adamw", {{"GPUMEMPROF_CATEGORIES", "0"}}, &other);
  if (off.dir.empty()) return;
  EXPECT_EQ(off.result.out, on.result.out);  // the program's own output, its ledger included
  const nlohmann::json f = framework(off);
  EXPECT_EQ(f["categories_at_peak"]["decided"], false);
  EXPECT_EQ(f["categories_at_peak"]["why_undecided"], "GPUMEMPROF_CATEGORIES=0 turned the category hooks off");
  EXPECT_EQ(by_category(f["categories_at_peak"]).at("unknown"), off.fake["peak"]["bytes"].get<uint64_t>());
  EXPECT_EQ(read_json_file(off.dir + "/manifest.json")["config"]["categories"], false);
  // No label and no phase in the trace.
  RunResult csv = box.run({Paths::tool(), "export", off.dir, "--format", "csv"});
  EXPECT_EQ(csv.out.find(",tensor_label,"), std::string::npos);
  EXPECT_EQ(csv.out.find(",phase,"), std::string::npos);
  // A bad value falls back to the default, on, with one line.
  const TorchRun bad = run("adamw", {{"GPUMEMPROF_CATEGORIES", "maybe"}}, &third);
  EXPECT_EQ(lines_with(bad.result.err, "GPUMEMPROF_CATEGORIES").size(), 1u) << bad.result.err;
  if (!bad.dir.empty()) {
    EXPECT_EQ(framework(bad)["categories_at_peak"]["decided"], true);
  }
}

// The benchmarks' switch (the bootstrap's set_active, tests/gpu/inference_bench.py --alternate
// hooks): with the hooks inactive they send nothing, and the program runs as with them.
TEST_F(TensorCategories, TheBenchmarksSwitchMakesTheHooksDoNothing) {
  Sandbox other;
  const TorchRun on = run("adamw", {}, &other);
  const TorchRun inactive = run("adamw_hooks_inactive");
  if (inactive.dir.empty()) return;
  EXPECT_EQ(inactive.fake["peak"], on.fake["peak"]);
  EXPECT_EQ(inactive.fake["at_exit"], on.fake["at_exit"]);
  EXPECT_EQ(framework(inactive)["categories_at_peak"]["decided"], false);
  RunResult csv = box.run({Paths::tool(), "export", inactive.dir, "--format", "csv"});
  EXPECT_EQ(csv.out.find(",tensor_label,"), std::string::npos);
  EXPECT_EQ(csv.out.find(",phase,"), std::string::npos);
}

TEST_F(TensorCategories, CheckMaxCategoryComparesEachCategorysOwnPeak) {
  const TorchRun r = run("sgd_accumulate");
  if (r.dir.empty()) return;
  const uint64_t activations = framework(r)["category_peaks"]["activations"].get<uint64_t>();
  ASSERT_GT(activations, 0u);
  RunResult pass = box.run({Paths::tool(), "check", r.dir, "--max-category",
                            "activations=" + std::to_string(activations), "--max-category", "kv-cache=0"});
  EXPECT_EQ(pass.exit_code, 0) << pass.out << pass.err;
  EXPECT_NE(pass.out.find("highest activations"), std::string::npos) << pass.out;
  RunResult fail = box.run({Paths::tool(), "check", r.dir, "--max-category=activations=" + std::to_string(activations - 1)});
  EXPECT_EQ(fail.exit_code, 1) << fail.out << fail.err;
  EXPECT_NE(fail.out.find("device 0: activations peaked at " + std::to_string(activations) + " B, over --max-category activations"),
            std::string::npos)
      << fail.out;
  RunResult bad = box.run({Paths::tool(), "check", r.dir, "--max-category", "weights=1G"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--max-category 'weights=1G' is not a category and a size; accepted: NAME=SIZE, NAME one of "
                         "parameters, gradients, optimizer_state, activations, temporaries, kv_cache, other"),
            std::string::npos)
      << bad.err;
  // Without categories the limit cannot be checked: it breaks, saying why.
  Sandbox other;
  const TorchRun off = run("sgd_accumulate", {{"GPUMEMPROF_CATEGORIES", "0"}}, &other);
  RunResult undecided = box.run({Paths::tool(), "check", off.dir, "--max-category", "activations=1G"});
  EXPECT_EQ(undecided.exit_code, 1);
  EXPECT_NE(undecided.out.find("--max-category cannot be checked: no tensor's category was decided "
                               "(GPUMEMPROF_CATEGORIES=0 turned the category hooks off)"),
            std::string::npos)
      << undecided.out;
}

TEST_F(TensorCategories, TheOomExplanationSplitsTheTensorsAtTheOomByCategory) {
  const TorchRun r = run("oom_forward");
  if (r.dir.empty()) return;
  RunResult json = box.run({Paths::tool(), "oom", r.dir, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  // Two bundles: the driver's refused cuMemAlloc, then PyTorch's own OOM with its figures.
  const nlohmann::json bundles = nlohmann::json::parse(json.out)["bundles"];
  ASSERT_EQ(bundles.size(), 2u);
  EXPECT_FALSE(bundles[0].contains("framework"));
  const nlohmann::json& x = bundles[1];
  const nlohmann::json& split = x["framework"]["categories"];
  ASSERT_TRUE(split.is_object()) << x.dump(1);
  const auto got = by_category(split);
  // Step 2's forward was cut short by the OOM: its input (at exit "other": no backward followed it)
  // is an activation there, beside step 1's 4-byte loss, still referenced; the parameters and AdamW's
  // state are the ledger's (the gradients were zeroed at the step's start).
  EXPECT_EQ(got.at("parameters"), r.fake["at_exit"]["parameters"].get<uint64_t>());
  EXPECT_EQ(got.at("optimizer_state"), r.fake["at_exit"]["optimizer_state"].get<uint64_t>());
  EXPECT_EQ(got.at("activations"), r.fake["at_exit"]["other"].get<uint64_t>() + 4);
  EXPECT_EQ(got.at("gradients"), 0u);
  EXPECT_EQ(split["phase"]["kind"], "forward");
  EXPECT_EQ(split["phase"]["step"], 2);
  bool advised = false;
  for (const auto& a : x["advice"]) advised = advised || a["id"] == "categories";
  EXPECT_TRUE(advised) << x["advice"].dump(1);
  RunResult text = box.run({Paths::tool(), "oom", r.dir});
  EXPECT_NE(text.out.find("The tensors by category at that moment (forward of step 2)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Optimizer state held"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace gmp::test
