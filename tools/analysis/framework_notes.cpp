#include "framework_notes.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "bytes_text.h"

namespace gmp::analysis {
namespace {

// Why a refused or detached bridge gave no tensor-level figures (format/event.cpp
// framework_refusal_name; docs/framework-bridge.md).
std::string refusal_text(const std::string& name) {
  if (name == "unknown_version") {
    return "no checked layout for this version; GPUMEMPROF_FRAMEWORK=unverified also tries the layouts read "
           "from its source";
  }
  if (name == "other_backend") {
    return "PyTorch uses another allocator backend (cudaMallocAsync or a pluggable allocator), whose "
           "allocations the driver level sees one by one";
  }
  if (name == "no_allocator") return "the caching allocator's symbol or object was not found";
  if (name == "attach_failed") return "PyTorch refused the tracker";
  if (name == "self_check_failed") {
    return "the self-check allocation did not arrive as expected, so the bridge detached";
  }
  if (name == "disabled") return "turned off by GPUMEMPROF_FRAMEWORK";
  return "an unknown reason";
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view file_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The signs that the program used a framework (docs/report.md, "JAX and CuPy"): its command line
// (argv and the executable's name) or a library it loaded (attribution.jsonl's module lines, written
// when stacks were on). Each is the reason shown, empty when there is no sign.
struct Signs {
  std::string jax, cupy, torch;
};

Signs framework_signs(const RunAnalysis& run) {
  Signs s;
  const ManifestRecord& m = run.run.manifest;
  std::vector<std::string> words = m.argv.value_or(std::vector<std::string>());
  words.emplace_back(file_name(m.exe));
  for (const std::string& w : words) {
    const std::string l = lower(w);
    if (s.jax.empty() && l.find("jax") != std::string::npos) s.jax = "the command line names jax";
    if (s.cupy.empty() && l.find("cupy") != std::string::npos) s.cupy = "the command line names cupy";
  }
  for (const reader::ModuleRecord& mod : run.attribution.modules) {
    const std::string_view path = mod.path, name = file_name(path);
    const std::string loaded = std::string(name) + " was loaded";
    if (s.jax.empty() && (path.find("/jaxlib/") != std::string_view::npos || name.starts_with("xla_extension"))) {
      s.jax = loaded;
    }
    if (s.cupy.empty() && (path.find("/cupy/") != std::string_view::npos ||
                           path.find("/cupy_backends/") != std::string_view::npos)) {
      s.cupy = loaded;
    }
    if (s.torch.empty() && name.starts_with("libc10_cuda")) s.torch = loaded;
  }
  return s;
}

// "one allocation of 12.00 GiB on device 0 (75% of the device)" for each device whose largest
// allocation live at its allocated peak holds at least half of it: JAX's preallocation looks so.
std::string large_reservations(const RunAnalysis& run) {
  std::string out;
  for (const auto& [ordinal, d] : run.devices) {
    const uint64_t total = d.final_stats.total_bytes;
    if (total == 0 || d.live_at_peak.largest.empty()) continue;
    const uint64_t size = d.live_at_peak.largest.front().size;
    if (size < total / 2 + total % 2) continue;
    out += (out.empty() ? "one allocation of " : " and one of ") + bytes_text(size) + " on device " +
           std::to_string(ordinal) + " (" + std::to_string(size * 100 / total) + "% of the device)";
  }
  return out;
}

constexpr const char* kJaxSwitches =
    "XLA_PYTHON_CLIENT_ALLOCATOR=platform (each buffer a cudaMalloc) or XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async "
    "(each a stream-ordered allocation) makes every buffer visible; XLA_PYTHON_CLIENT_PREALLOCATE=false only "
    "grows the reservation on demand";
constexpr const char* kCupySwitches =
    "cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc) makes each array a stream-ordered allocation "
    "and cupy.cuda.set_allocator(None) a plain cudaMalloc: either makes every array visible";

}  // namespace

std::string framework_display_name(const RunAnalysis& run) {
  const auto& f = run.run.figures.framework;
  return !f || f->name == "pytorch" || f->name.empty() ? "PyTorch" : f->name;
}

std::string allocation_kind_label(const LiveAllocation& a) {
  return a.kind == Kind::None ? "tensor" : std::string(kind_name(a.kind));
}

std::vector<FrameworkRow> framework_rows(const RunAnalysis& run, const DeviceAnalysis& d) {
  const FrameworkStats& f = d.framework;
  const std::string fw = framework_display_name(run);
  std::vector<FrameworkRow> rows = {
      {"allocated", f.allocated.peak, f.allocated_peak_ns, f.allocated.current,
       "tensors: the bytes live tensors asked for"},
      {"reserved", f.reserved.peak, f.reserved_peak_ns, f.reserved.current, fw + "'s cache: its segments"},
      {"cached", std::nullopt, std::nullopt, f.cached(),
       "reserved less allocated: free blocks in the cache, fragmentation and rounding"},
      // No peak: every free is pending for the instant between its two events, so the counter's peak
      // holds the largest tensor ever freed rather than what waited on other streams.
      {"pending free", std::nullopt, std::nullopt, f.pending_free.current,
       "tensors freed while work on other streams may still use them"},
      {"outside " + fw, f.outside.peak, f.outside_peak_ns, f.outside.current,
       "driver-level reserved outside " + fw + "'s segments: cuBLAS/NCCL workspaces, other libraries"}};
  if (d.nvml_process_peak > 0) {
    const DeviceStats& s = d.final_stats;
    std::optional<uint64_t> at_exit;
    if (s.nvml.process_known) at_exit = s.nvml.process_used - std::min(s.nvml.process_used, s.reserved.current);
    rows.push_back({"context (NVML)", d.nvml_process_peak - std::min(d.nvml_process_peak, d.reserved_peak.bytes),
                    std::nullopt, at_exit,
                    "NVML's process usage less the driver-level reserved: the CUDA context, modules, untracked "
                    "memory"});
  }
  return rows;
}

std::string framework_state_line(const RunAnalysis& run) {
  const auto& f = run.run.figures.framework;
  if (!f) return {};
  const std::string framework = framework_display_name(run);
  std::string name = framework;
  if (!f->version.empty() && f->version != "0.0.0") name += " " + f->version;
  if (f->state == "attached") {
    return name + ": the bridge attached; tensor-level figures follow (allocated = bytes live tensors asked for, "
                  "reserved = " + framework + "'s cache)";
  }
  return name + ": tensor-level figures are not available: the bridge " + (f->state.empty() ? "refused" : f->state) +
         " (" + f->refusal + ": " + refusal_text(f->refusal) + "); figures are driver level only";
}

std::vector<std::string> hidden_memory_notes(const RunAnalysis& run) {
  std::vector<std::string> notes;
  if (run.run.figures.framework) return notes;
  const Signs signs = framework_signs(run);
  const std::string large = large_reservations(run);
  // A stream-ordered pool in use: JAX's cuda_async or CuPy's MemoryAsyncPool, each buffer visible.
  const bool pools = std::any_of(run.devices.begin(), run.devices.end(),
                                 [](const auto& d) { return d.second.final_stats.kind(Kind::Pool).allocs > 0; });
  if (!signs.torch.empty() && signs.jax.empty() && signs.cupy.empty()) {
    notes.push_back("PyTorch is in the process (" + signs.torch +
                    ") but the framework bridge never reported: figures are driver level only, where PyTorch's "
                    "segments (its cache) count as allocated. The bridge comes with `gpumemprof run` (with plain "
                    "LD_PRELOAD, put <prefix>/lib/gpumemprof/python first on PYTHONPATH); python -S, -I or -E turn "
                    "it off");
  } else if (!signs.jax.empty() && (!large.empty() || !pools)) {
    notes.push_back("JAX (" + signs.jax + "): " +
                    (large.empty() ? std::string("unless the run had XLA_PYTHON_CLIENT_ALLOCATOR=platform, its "
                                                 "allocator keeps buffers inside reservations it grows itself")
                                   : large + " is its preallocated reservation (by default 75% of each device)") +
                    ", and the buffers inside are not visible at driver level. " + kJaxSwitches);
  } else if (!signs.cupy.empty() && !pools) {
    notes.push_back("CuPy (" + signs.cupy +
                    "): its default MemoryPool keeps freed blocks for reuse, so the driver level sees the pool's "
                    "cudaMalloc calls, not each array's life. " + kCupySwitches);
  } else if (signs.cupy.empty() && !large.empty()) {
    notes.push_back("At driver level, " + large +
                    " is likely a framework's own pool (JAX preallocates 75% of each device by default), and what "
                    "lives inside it is not visible at driver level. For JAX, " + kJaxSwitches +
                    ". For CuPy, " + kCupySwitches);
  }
  return notes;
}

}  // namespace gmp::analysis
