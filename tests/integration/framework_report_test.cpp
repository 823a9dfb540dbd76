// `gpumemprof report` and `gpumemprof html` on runs with PyTorch's caching allocator seen from
// inside (framework_run.h writes them as the bridge would): both levels with exact figures, the
// tensors live at their peak by the model's Python line, tensors as leaks and the cache as not a
// leak, the same figures without summary.json, a refused bridge, and what JAX and CuPy hide.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "framework_run.h"
#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t kMs = 1'000'000;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string run_dir(const Sandbox& box, const std::string& name = "run") {
  const std::string dir = box.dir() + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

std::string report_text(const std::string& dir) {
  RunResult r = run_tool({"report", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

nlohmann::json report_json(const std::string& dir) {
  RunResult r = run_tool({"report", dir, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

// Each of `lines` appears in `text` as a whole line.
void expect_lines(const std::string& text, const std::vector<std::string>& lines) {
  for (const std::string& l : lines) EXPECT_NE(text.find("\n" + l + "\n"), std::string::npos) << l << "\n---\n" << text;
}

// The JSON the HTML page embeds for its script.
nlohmann::json embedded(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"gmp-data\">";
  const size_t start = page.find(open);
  const size_t end = page.find("</script>", start);
  if (start == std::string::npos || end == std::string::npos) return nullptr;
  return nlohmann::json::parse(page.substr(start + open.size(), end - start - open.size()), nullptr, false);
}

const std::vector<std::string> kBothLevels = {
    "  framework: PyTorch 2.11.0: the bridge attached; tensor-level figures follow (allocated = bytes live tensors "
    "asked for, reserved = PyTorch's cache)",
    "  driver level (what the CUDA driver handed out; PyTorch's segments count as allocated here):",
    "  allocated  peak 128.00 MiB  at 30.0 ms    final 28.00 MiB",
    "  PyTorch level (tensors in PyTorch's caching allocator):",
    "    allocated        peak 110.00 MiB at 30.0 ms      at exit 4.00 MiB    tensors: the bytes live tensors "
    "asked for",
    "    reserved         peak 120.00 MiB at 30.0 ms      at exit 20.00 MiB   PyTorch's cache: its segments",
    "    cached                                           at exit 16.00 MiB   reserved less allocated: free "
    "blocks in the cache, fragmentation and rounding",
    "    pending free                                     at exit 0 B         tensors freed while work on other "
    "streams may still use them",
    "    outside PyTorch  peak 8.00 MiB at 5.0 ms         at exit 8.00 MiB    driver-level reserved outside PyTorch's "
    "segments: cuBLAS/NCCL workspaces, other libraries",
    "    context (NVML)   peak 300.00 MiB                 at exit 284.00 MiB  NVML's process usage less the "
    "driver-level reserved: the CUDA context, modules, untracked memory",
    "    4 tensors allocated, 3 freed; 2 segments reserved, 1 released; 0 OOMs",
    "  tensors live at PyTorch's allocated peak: 3 tensors, 110.00 MiB",
    "leaks: 1 tensor (4.00 MiB) still allocated at exit",
    "  PyTorch held 20.00 MiB cached at exit in 1 segment (its cache, not a leak)",
    "  outside PyTorch: live at exit 1 allocation, 8.00 MiB",
};

TEST(FrameworkReport, BothLevelsWithExactFigures) {
  Sandbox box;
  const std::string dir = run_dir(box);
  write_training_run(dir);
  const std::string text = report_text(dir);
  expect_lines(text, kBothLevels);
  // The tensors at their peak by the model's line: train.py's under torch/nn, and a model library's
  // (transformers) on a thread without user code rather than torch's own Python under it.
  EXPECT_NE(text.find("      104.00 MiB  in 2      Model.forward (model.py:42)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      6.00 MiB    in 1      LlamaMLP.forward (modeling_llama.py:200)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("      100.00 MiB  tensor  torch_caching_allocator at 30.0 ms    thread 101  "
                      "Model.forward (model.py:42)\n"),
            std::string::npos)
      << text;

  const nlohmann::json j = report_json(dir);
  EXPECT_EQ(j["live_at_exit"]["count"], 2);  // the tensor and NCCL's buffer, not PyTorch's segment
  EXPECT_EQ(j["live_at_exit"]["bytes"], 12 * MiB);
  EXPECT_EQ(j["framework"]["cached_at_exit"]["bytes"], 20 * MiB);
  const nlohmann::json& fw = j["analysis"]["devices"][0]["framework"];
  EXPECT_EQ(fw["allocated_bytes"]["peak"], 110 * MiB);
  EXPECT_EQ(fw["allocated_peak_at_ns"], 30 * kMs + 2000);
  EXPECT_EQ(fw["reserved_bytes"]["peak"], 120 * MiB);
  EXPECT_EQ(fw["cached_bytes"], 16 * MiB);
  EXPECT_EQ(fw["pending_free_bytes"]["current"], 0);
  EXPECT_EQ(fw["outside_bytes"]["current"], 8 * MiB);
  EXPECT_EQ(fw["tensors_at_peak"]["count"], 3);
  EXPECT_EQ(fw["tensors_at_peak"]["bytes"], 110 * MiB);
  EXPECT_EQ(fw["tensor_sites_at_peak"][0]["site"], "Model.forward (model.py:42)");
  EXPECT_EQ(fw["tensor_sites_at_peak"][0]["bytes"], 104 * MiB);
  EXPECT_EQ(fw["tensor_sites_at_peak"][1]["site"], "LlamaMLP.forward (modeling_llama.py:200)");
  const nlohmann::json& a = j["analysis"];
  EXPECT_EQ(a["tensor_leaks"]["count"], 1);
  EXPECT_EQ(a["tensor_leaks"]["bytes"], 4 * MiB);
  EXPECT_EQ(a["tensor_leak_sites"][0]["site"], "Model.forward (model.py:42)");
  EXPECT_EQ(a["leaks"]["count"], 1);  // NCCL's buffer; PyTorch's segment is its cache
  EXPECT_EQ(a["leaks"]["bytes"], 8 * MiB);
  EXPECT_EQ(a["devices"][0]["live_at_peak"]["count"], 3);  // driver level: the buffer and both segments
  EXPECT_EQ(a["framework_notes"].size(), 1u);
}

TEST(FrameworkReport, TheSameFiguresWhenSummaryJsonIsMissing) {
  Sandbox box;
  const std::string dir = run_dir(box);
  write_training_run(dir, false);
  const std::string text = report_text(dir);
  EXPECT_NE(text.find("figures are rebuilt from the 22 events in trace.gmpt"), std::string::npos) << text;
  // The same figures; but without summary.json the process died, and what it held is no leak.
  std::vector<std::string> lines = kBothLevels;
  for (std::string& l : lines) {
    if (l == "leaks: 1 tensor (4.00 MiB) still allocated at exit") {
      l = "live when the process died: 1 tensor (4.00 MiB) still allocated";
    }
    if (l == "  outside PyTorch: live at exit 1 allocation, 8.00 MiB") l = "  outside PyTorch: 1 allocation, 8.00 MiB";
  }
  expect_lines(text, lines);
}

TEST(FrameworkReport, ARefusedBridgeSaysWhyAndKeepsTheDriverLevelLeaks) {
  Sandbox box;
  const std::string dir = run_dir(box);
  FrameworkRun(dir)
      .refuse(1 * kMs, FrameworkRefusal::UnknownVersion, 2, 3, 1)
      .driver_alloc(10 * kMs, 101, 0x7f1000000000, 20 * MiB, 0)  // a refused bridge records nothing more
      .write();
  const std::string text = report_text(dir);
  expect_lines(text, {"  framework: PyTorch 2.3.1: tensor-level figures are not available: the bridge refused "
                      "(unknown_version: no checked layout for this version; GPUMEMPROF_FRAMEWORK=unverified also "
                      "tries the layouts read from its source); figures are driver level only",
                      "leaks: live at exit 1 allocation, 20.00 MiB"});
  EXPECT_EQ(text.find("PyTorch level"), std::string::npos) << text;
  EXPECT_EQ(text.find("tensors"), std::string::npos) << text;
}

TEST(FrameworkReport, JaxPreallocationIsNamedWithTheSwitchesThatShowItsBuffers) {
  Sandbox box;
  const std::string dir = run_dir(box);
  FrameworkRun(dir).process({"python3", "train_jax.py"}, "/usr/bin/python3.12")
      .driver_alloc(1 * kMs, 101, 0x7f1000000000, 768 * MiB, 0)
      .write();
  expect_lines(report_text(dir),
               {"  note: JAX (the command line names jax): one allocation of 768.00 MiB on device 0 (75% of the "
                "device) is its preallocated reservation (by default 75% of each device), and the buffers inside "
                "are not visible at driver level. XLA_PYTHON_CLIENT_ALLOCATOR=platform (each buffer a cudaMalloc) or "
                "XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async (each a stream-ordered allocation) makes every buffer "
                "visible; XLA_PYTHON_CLIENT_PREALLOCATE=false only grows the reservation on demand"});
}

TEST(FrameworkReport, CupyFromALoadedLibraryAndALargeReservationOfNoKnownFramework) {
  Sandbox box;
  const std::string cupy = run_dir(box, "cupy");
  FrameworkRun(cupy)
      .module("/opt/venv/lib/python3.12/site-packages/cupy/_core/core.cpython-312-x86_64-linux-gnu.so", 0x7e00000000,
              0x7e00100000)
      .driver_alloc(1 * kMs, 101, 0x7f1000000000, 1 * MiB, 0)
      .write();
  const std::string text = report_text(cupy);
  EXPECT_NE(text.find("  note: CuPy (core.cpython-312-x86_64-linux-gnu.so was loaded): its default MemoryPool keeps "
                      "freed blocks for reuse"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc) makes each array a stream-ordered "
                      "allocation and cupy.cuda.set_allocator(None) a plain cudaMalloc"),
            std::string::npos)
      << text;

  const std::string large = run_dir(box, "large");
  FrameworkRun(large).process({"./solver"}, "/work/solver").driver_alloc(1 * kMs, 101, 0x7f1000000000, 600 * MiB, 0)
      .write();
  const std::string generic = report_text(large);
  EXPECT_NE(generic.find("  note: At driver level, one allocation of 600.00 MiB on device 0 (58% of the device) is "
                         "likely a framework's own pool (JAX preallocates 75% of each device by default)"),
            std::string::npos)
      << generic;
  const std::string page = box.dir() + "/large.html";
  ASSERT_EQ(run_tool({"html", large, "-o", page}).exit_code, 0);
  EXPECT_NE(slurp(page).find("<p class=\"note framework-hidden warn\">At driver level, one allocation of 600.00 MiB on "
                             "device 0 (58% of the device) is likely a framework&#39;s own pool"),
            std::string::npos);

  const std::string small = run_dir(box, "small");  // a driver-level run: nothing to say
  FrameworkRun(small).process({"./solver"}, "/work/solver").driver_alloc(1 * kMs, 101, 0x7f1000000000, 100 * MiB, 0)
      .write();
  EXPECT_EQ(report_text(small).find("note:"), std::string::npos);
}

TEST(FrameworkHtml, BothLevelsInTheTablesTheChartDataAndTheLeaks) {
  Sandbox box;
  const std::string dir = run_dir(box);
  write_training_run(dir);
  const std::string out = box.dir() + "/report.html";
  RunResult r = run_tool({"html", dir, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = slurp(out);
  for (const std::string& s : {
           std::string("<p class=\"note framework-state\"><strong>Framework:</strong> PyTorch 2.11.0: the bridge "
                       "attached;"),
           std::string("<div class=\"card-label\">Peak tensors, device 0</div><div class=\"card-value\">110.00 "
                       "MiB</div><div class=\"card-sub\">at 30.0 ms; PyTorch reserved at most 120.00 MiB</div>"),
           std::string("<span class=\"key key-tensors\"></span>PyTorch tensors (allocated)"),
           std::string("<h3 class=\"framework-level\">PyTorch level: tensors and PyTorch's cache</h3>"),
           std::string("<tr data-figure=\"allocated\"><td>allocated</td><td class=\"num\">110.00 MiB</td><td "
                       "class=\"num\">30.0 ms</td><td class=\"num\">4.00 MiB</td>"),
           std::string("<tr data-figure=\"cached\"><td>cached</td><td class=\"num\"><span class=\"muted\">-</span>"
                       "</td><td class=\"num\"><span class=\"muted\">-</span></td><td class=\"num\">16.00 MiB</td>"),
           std::string("<tr data-figure=\"outside PyTorch\"><td>outside PyTorch</td><td class=\"num\">8.00 MiB</td>"),
           std::string("<tr data-figure=\"context (NVML)\"><td>context (NVML)</td><td class=\"num\">300.00 MiB</td>"),
           std::string("<h3 class=\"tensors-at-peak\">Tensors live at PyTorch's allocated peak: 3 tensors, "
                       "110.00 MiB</h3>"),
           std::string("<code>Model.forward (model.py:42)</code></td><td class=\"num\">104.00 MiB</td>"),
           std::string("<strong class=\"tensor-leak-total\">1 tensor (4.00 MiB)</strong> still allocated at exit."),
           std::string("<p class=\"framework-cached\">PyTorch held <strong>20.00 MiB</strong> cached at exit in 1 "
                       "segment (its cache, not a leak).</p>"),
           std::string("<strong class=\"leak-total\">1 allocation, 8.00 MiB</strong> of device memory outside "
                       "PyTorch's cache was still allocated"),
       }) {
    EXPECT_NE(page.find(s), std::string::npos) << s;
  }
  const nlohmann::json data = embedded(page);
  ASSERT_TRUE(data.is_object());
  const nlohmann::json& tl = data["analysis"]["devices"][0]["timeline"];
  uint64_t tensors = 0, reserved = 0;
  for (const auto& v : tl["tensors_max"]) tensors = std::max(tensors, v.get<uint64_t>());
  for (const auto& v : tl["framework_reserved_max"]) reserved = std::max(reserved, v.get<uint64_t>());
  EXPECT_EQ(tensors, 110 * MiB);
  EXPECT_EQ(reserved, 120 * MiB);
  EXPECT_EQ(tl["tensors_last"].back(), 4 * MiB);
  EXPECT_EQ(tl["framework_reserved_last"].back(), 20 * MiB);
}

}  // namespace
}  // namespace gmp::test
