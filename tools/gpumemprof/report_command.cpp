// `gpumemprof report DIR [--json]`: what a run used, starting from the peak. From summary.json and
// a replay of the trace; when the process died before writing summary.json, everything comes from
// the trace and the report says so.
#include <cstdio>
#include <cstring>
#include <string>

#include "analysis_json.h"
#include "bytes_text.h"
#include "command_args.h"
#include "commands.h"
#include "format.h"
#include "framework_notes.h"
#include "job_view.h"
#include "json_text.h"
#include "report_attribution.h"
#include "report_device_limit.h"
#include "run_analysis.h"

namespace gmp::tool {
namespace {

constexpr const char* kUsage =
    "usage: gpumemprof report DIR [--json] [--since T] [--until T]\n"
    "       gpumemprof report ROOT [--json]\n"
    "  Per device: peak allocated and reserved memory and when; what was live at the allocated peak, by\n"
    "  kind and the largest allocations; allocations live at exit (leaks); failed allocations and OOM\n"
    "  bundles; alerts; NVML's view of the process; lost events. With GPUMEMPROF_STACKS, the memory live at\n"
    "  each peak and at exit by call site; with ranges (NVTX or gpumemprof_range_push), marks and pauses,\n"
    "  a table of each (docs/attribution.md). DIR is a run directory written by libgpumemprof.so. Without\n"
    "  summary.json (a killed process) the figures are rebuilt from the trace. Frames get file:line when\n"
    "  addr2line is on PATH (GPUMEMPROF_ADDR2LINE=0 turns that off).\n"
    "  Where PyTorch's caching allocator was seen from inside (the framework bridge), both levels: tensors\n"
    "  (allocated) against PyTorch's cache (reserved), what is cached, pending and outside PyTorch, the tensors\n"
    "  live at their peak by call site, and tensors as leaks (docs/report.md).\n"
    "  --json  the same as one JSON object: summary.json's figures plus an \"analysis\" object\n"
    "  --since T, --until T  the figures of this window of the run (times since the profiler started: 1.5s,\n"
    "          250ms, 2m): peaks inside it, what was live at its end; summary.json's figures stay the whole run's\n"
    "  ROOT, a directory holding the run directories of a job (gpumemprof run -o ROOT -- torchrun ...): one row\n"
    "  per rank and device (host, peaks and when, OOMs, alerts, lost events), the spread of the peaks across\n"
    "  the ranks, which rank ran out of memory first, and each rank's own report command. Exit status 2 only\n"
    "  when none of its run directories can be read (docs/report.md, \"Jobs\").\n";

constexpr size_t kMarkersShown = 20;

using ull = unsigned long long;

// The label of summary.json's figures in a window's report, which are the whole run's.
const char* whole_run(const analysis::RunAnalysis& run) { return run.window.whole() ? "" : " (whole run)"; }

void print_allocation(const analysis::RunAnalysis& run, const LiveAllocation& a, bool with_device) {
  const uint64_t start_ns = run.start_ns;
  std::printf("      %-11s %-7s ", bytes_text(a.size).c_str(), analysis::allocation_kind_label(a).c_str());
  if (with_device) std::printf("device %-2d ", a.device);
  std::printf("%-26s at %-10s thread %u", std::string(api_name(a.api)).c_str(),
              human_duration_ns(a.timestamp_ns > start_ns ? a.timestamp_ns - start_ns : 0).c_str(), a.thread_id);
  // Its call site, named as in the "by call site" lists below.
  if (a.stack_id != 0) std::printf("  %s", analysis::site_label(a.stack_id, run.stacks).c_str());
  std::printf("\n");
}

void print_by_kind(const analysis::LiveSet& set) {
  for (int k = 1; k < kKindCount; ++k) {
    const analysis::Bytes& b = set.by_kind[k];
    if (b.count == 0) continue;
    std::printf("      %-8s %-11s in %llu\n", std::string(kind_name(static_cast<Kind>(k))).c_str(),
                bytes_text(b.bytes).c_str(), (ull)b.count);
  }
}

// The largest allocations of `set` and its call sites, as every "live" list shows them.
void print_largest(const analysis::RunAnalysis& run, const analysis::LiveSet& set,
                   const std::vector<analysis::CallSite>& sites, bool with_device) {
  std::printf("    largest:\n");
  for (const LiveAllocation& a : set.largest) print_allocation(run, a, with_device);
  print_call_sites(run, sites, 4);
}

// The framework level of a device (docs/report.md, "Two levels"): allocated (tensors) against
// reserved (the framework's cache), the gap between them, frees pending on other streams, what the
// device holds outside the framework, and NVML's view beyond the driver level.
void print_framework(const analysis::RunAnalysis& run, const analysis::DeviceAnalysis& d) {
  const FrameworkStats& f = d.framework;
  const std::string fw = analysis::framework_display_name(run);
  std::printf("  %s level (tensors in %s's caching allocator):\n", fw.c_str(), fw.c_str());
  for (const analysis::FrameworkRow& r : analysis::framework_rows(run, d)) {
    std::string peak;
    if (r.peak) peak = "peak " + bytes_text(*r.peak);
    if (r.peak_at_ns) peak += " at " + human_duration_ns(*r.peak_at_ns);
    std::printf("    %-16s %-31s at exit %-11s %s\n", r.name.c_str(), peak.c_str(),
                r.at_exit ? bytes_text(*r.at_exit).c_str() : "?", r.meaning.c_str());
  }
  std::printf("    %s allocated, %llu freed; %s reserved, %llu released; %s\n",
              counted(f.tensor_allocs, "tensor").c_str(), (ull)f.tensor_frees,
              counted(f.segment_allocs, "segment").c_str(), (ull)f.segment_frees, counted(f.ooms, "OOM").c_str());
  const analysis::LiveSet& live = d.tensors_at_peak;
  if (live.total.count > 0) {
    std::printf("  tensors live at %s's allocated peak: %s, %s\n", fw.c_str(),
                counted(live.total.count, "tensor").c_str(), bytes_text(live.total.bytes).c_str());
    print_largest(run, live, d.tensor_sites_at_peak, false);
  }
}

void print_device(const analysis::RunAnalysis& run, const analysis::DeviceAnalysis& d) {
  const DeviceStats& s = d.final_stats;
  std::printf("\ndevice %d  %s  (%s total)\n", d.device, d.name.empty() ? "?" : d.name.c_str(),
              bytes_text(s.total_bytes).c_str());
  if (d.framework.attached) {
    std::printf("  driver level (what the CUDA driver handed out; %s's segments count as allocated here):\n",
                analysis::framework_display_name(run).c_str());
  }
  std::printf("  allocated  peak %-11s at %-10s final %s\n", bytes_text(d.allocated_peak.bytes).c_str(),
              human_duration_ns(d.allocated_peak.at_ns).c_str(), bytes_text(s.allocated.current).c_str());
  std::printf("  reserved   peak %-11s at %-10s final %s\n", bytes_text(d.reserved_peak.bytes).c_str(),
              human_duration_ns(d.reserved_peak.at_ns).c_str(), bytes_text(s.reserved.current).c_str());
  std::printf("    %-8s %-12s %-12s %-10s %s\n", "kind", "peak", "final", "allocs", "frees");
  for (Kind k : {Kind::Linear, Kind::Pool, Kind::Vmm, Kind::Array, Kind::Managed}) {
    const KindStats& ks = s.kind(k);
    if (ks.allocs == 0 && ks.bytes.peak == 0) continue;
    std::printf("    %-8s %-12s %-12s %-10llu %llu\n", std::string(kind_name(k)).c_str(),
                bytes_text(ks.bytes.peak).c_str(), bytes_text(ks.bytes.current).c_str(), (ull)ks.allocs,
                (ull)ks.frees);
  }
  if (s.pool_reserved.peak > 0) {
    std::printf("    pools reserved peak %s, final %s\n", bytes_text(s.pool_reserved.peak).c_str(),
                bytes_text(s.pool_reserved.current).c_str());
  }
  if (s.vmm_physical.peak > 0) {
    std::printf("    vmm physical peak %s, final %s\n", bytes_text(s.vmm_physical.peak).c_str(),
                bytes_text(s.vmm_physical.current).c_str());
  }
  const analysis::LiveSet& live = d.live_at_peak;
  if (live.total.count > 0) {
    std::printf("  live at the allocated peak: %s, %s\n", counted(live.total.count, "allocation").c_str(),
                bytes_text(live.total.bytes).c_str());
    print_by_kind(live);
    print_largest(run, live, d.sites_at_peak, false);
  }
  if (d.framework.attached) print_framework(run, d);
  if (d.nvml_process_peak > 0) {
    const uint64_t tracked = d.reserved_peak.bytes;
    std::printf("  NVML: this process used at most %s of the device (tracked reserved peak %s",
                bytes_text(d.nvml_process_peak).c_str(), bytes_text(tracked).c_str());
    if (d.nvml_process_peak > tracked) {
      std::printf("; %s more is the CUDA context, loaded modules and memory not allocated through the tracked calls",
                  bytes_text(d.nvml_process_peak - tracked).c_str());
    }
    std::printf(")\n");
  } else if (d.nvml_device_used_peak > 0) {
    std::printf("  NVML: device used at most %s by all processes (this process's share not reported)\n",
                bytes_text(d.nvml_device_used_peak).c_str());
  }
  print_device_limit(d);
  std::printf("  allocations %llu, frees %llu, failed allocations %llu%s\n", (ull)s.alloc_count, (ull)s.free_count,
              (ull)s.failed_alloc_count, run.window.whole() ? "" : " (from the run's start to the window's end)");
}

void print_markers(const analysis::RunAnalysis& run, bool (*wanted)(analysis::Marker::Type)) {
  size_t shown = 0, total = 0;
  for (const analysis::Marker& m : run.markers) {
    if (!wanted(m.type)) continue;
    ++total;
    if (shown >= kMarkersShown) continue;
    ++shown;
    std::printf("    at %-10s ", human_duration_ns(m.at_ns).c_str());
    if (m.device >= 0) std::printf("device %-2d ", m.device);
    std::printf("%s", marker_label(m).c_str());
    if (m.type == analysis::Marker::Type::AlertFired || m.type == analysis::Marker::Type::AlertCleared) {
      std::printf(" (allocated %s, reserved %s)", bytes_text(m.size).c_str(), bytes_text(m.reserved).c_str());
    }
    std::printf("\n");
  }
  if (total > shown) std::printf("    ... and %llu more (--json lists them)\n", (ull)(total - shown));
}

bool is_failure(analysis::Marker::Type t) { return t == analysis::Marker::Type::AllocFailed; }
bool is_oom_event(analysis::Marker::Type t) {
  return t == analysis::Marker::Type::OomBundle || t == analysis::Marker::Type::OomRecovered;
}
bool is_alert(analysis::Marker::Type t) {
  return t == analysis::Marker::Type::AlertFired || t == analysis::Marker::Type::AlertCleared;
}

// Why call sites may be missing or partly unnamed; silent for runs that recorded no stacks.
void print_attribution_notes(const analysis::RunAnalysis& run) {
  const reader::Attribution& a = run.attribution;
  if (run.stack_events > 0 && !a.present) {
    std::printf("  note: allocations carry stack ids but attribution.jsonl is missing; call sites are not named\n");
  }
  if (a.skipped_lines > 0 || a.partial_last_line) {
    std::printf("  note: attribution.jsonl: %llu unreadable lines skipped%s\n", (ull)a.skipped_lines,
                a.partial_last_line ? ", and a partial last line (the process was killed mid-write)" : "");
  }
}

// Leaks: what was still allocated at exit. Where the bridge attached, the tensors are the leaks and
// the framework's segments its cache (docs/report.md, "Leaks"); the driver-level list then holds
// only what lies outside those segments.
void print_leaks(const analysis::RunAnalysis& run) {
  const Summary::Framework* fw = analysis::attached_framework(run);
  if (fw != nullptr) {
    const analysis::LiveSet& t = run.tensor_leaks;
    const std::string name = analysis::framework_display_name(run);
    std::printf("%s: %s (%s) still allocated%s\n", run.window.whole() ? "leaks" : "at the window's end",
                counted(t.total.count, "tensor").c_str(), bytes_text(t.total.bytes).c_str(),
                run.window.whole() ? " at exit" : "");
    if (t.total.count > 0) print_largest(run, t, run.tensor_leak_sites, true);
    std::printf("  %s held %s cached at exit%s in %s (its cache, not a leak)\n", name.c_str(),
                bytes_text(fw->cached_at_exit_bytes).c_str(), whole_run(run),
                counted(fw->cached_at_exit_count, "segment").c_str());
    std::printf("  outside %s: ", name.c_str());
  } else {
    std::printf(run.window.whole() ? "leaks: " : "at the window's end: ");
  }
  std::printf("live at exit %s, %s\n", counted(run.leaks.total.count, "allocation").c_str(),
              bytes_text(run.leaks.total.bytes).c_str());
  if (run.leaks.total.count > 0) {
    print_by_kind(run.leaks);
    print_largest(run, run.leaks, run.leak_sites, true);
  }
}

void print_text(const analysis::RunAnalysis& run) {
  const Summary& s = run.run.figures;
  std::printf("gpumemprof report: %s\n", run.run.path.c_str());
  if (!run.window.whole()) {
    std::printf("  window: %s since the profiler started; peaks, live sets, markers and ranges are the window's,\n"
                "  figures marked (whole run) are summary.json's\n",
                window_text(run.window).c_str());
  }
  if (const auto& t = s.trace; t && t->segments_dropped > 0) {
    std::printf("  trace: kept from %s on; its oldest %llu segments (%llu events) were deleted to stay within\n"
                "  GPUMEMPROF_TRACE_MAX=%s\n",
                human_duration_ns(t->kept_from_ns).c_str(), (ull)t->segments_dropped, (ull)t->events_dropped,
                bytes_text(t->max_bytes).c_str());
  }
  if (run.run.has_manifest) {
    const std::string& exe = run.run.manifest.exe;
    std::printf("  process %s (pid %llu), %s of CUDA activity\n", exe.empty() ? "?" : exe.c_str(),
                (ull)run.run.manifest.pid.value_or(0), human_duration_ns(run.duration_ns).c_str());
  }
  if (run.run.summary_rebuilt && run.run.events.final_flush) {
    std::printf("  note: %s; figures rebuilt from the trace\n", run.run.rebuild_reason.c_str());
  }
  for (const std::string& w : reader::event_count_warnings(run.run.events)) std::printf("  note: %s\n", w.c_str());
  if (run.truncated_bytes) {
    std::printf("  note: trace.gmpt ends in a partial record of %llu bytes (a write cut short); it is ignored\n",
                (ull)run.truncated_bytes);
  }
  print_attribution_notes(run);
  if (const std::string state = analysis::framework_state_line(run); !state.empty()) {
    std::printf("  framework: %s\n", state.c_str());
  }
  for (const std::string& n : analysis::hidden_memory_notes(run)) std::printf("  note: %s\n", n.c_str());
  if (run.devices.empty()) std::printf("\nno device memory was allocated\n");
  for (const auto& [ordinal, d] : run.devices) print_device(run, d);

  // Whole runs keep summary.json's figure, which a trace that lacks events understates.
  const Counter& pinned = run.window.whole() ? s.host_pinned_bytes : run.host_pinned;
  std::printf("\npinned host memory  peak %s, final %s\n", bytes_text(pinned.peak).c_str(),
              bytes_text(pinned.current).c_str());
  print_leaks(run);
  const uint64_t failed = s.failed_allocations.size();
  uint64_t failed_total = 0;
  for (const auto& [_, d] : run.devices) failed_total += d.final_stats.failed_alloc_count;
  std::printf("failed allocations%s: %llu\n", whole_run(run), (ull)std::max<uint64_t>(failed, failed_total));
  print_markers(run, is_failure);
  const uint64_t bundles = s.oom.bundles_written;
  std::printf("OOM%s: %s, %s, %llu recovered\n", whole_run(run),
              counted(s.oom.failures, "out-of-memory failure").c_str(),
              counted(bundles, "bundle").c_str(), (ull)s.oom.recovered);
  print_markers(run, is_oom_event);
  if (bundles > 0) std::printf("    explain with: gpumemprof oom %s\n", run.run.path.c_str());
  std::printf("alerts%s: %s fired\n", whole_run(run), counted(s.alerts.fired(), "alert").c_str());
  print_markers(run, is_alert);
  if (run.markers_dropped > 0)
    std::printf("  (%llu more events of these kinds were not kept)\n", (ull)run.markers_dropped);
  print_ranges(run);
  print_marks(run);
  print_pauses(run);
  std::printf("events%s: %s\n", whole_run(run), reader::event_counts_line(run.run.events).c_str());
}

}  // namespace

int report_main(int argc, char** argv) {
  PathArgs args;
  analysis::Options options;
  if (auto status = take_window_args("report", argc, argv, options.window)) return *status;
  if (auto status = parse_path_args("report", kUsage, argc, argv, args, "--json, --since, --until, --help")) {
    return *status;
  }
  if (args.paths.size() > 1) {
    std::fprintf(stderr, "gpumemprof report: one run directory expected, got '%s' too\n", args.paths[1].c_str());
    return 2;
  }
  if (args.paths.empty()) {
    std::fprintf(
        stderr,
        "gpumemprof report: no run directory given; usage: gpumemprof report DIR [--json] (--help says more)\n");
    return 2;
  }
  const std::string& dir = args.paths[0];
  const bool json = args.json;
  if (is_job_root(dir)) {
    if (!options.window.whole()) return window_refused("report", dir);
    return report_job(dir, json);
  }
  std::string error;
  reader::Progress progress("gpumemprof report");
  options.progress = &progress;
  auto run = analysis::analyze_run(dir, options, error);
  if (!run) {
    std::fprintf(stderr, "gpumemprof report: %s\n", error.c_str());
    return 2;
  }
  if (json) {
    nlohmann::json out = run->run.summary;
    out["rebuilt_from_trace"] = run->run.summary_rebuilt;
    out["analysis"] = analysis::analysis_json(*run, false);
    std::printf("%s\n", json_text(out, 2).c_str());
  } else {
    print_text(*run);
  }
  return 0;
}

}  // namespace gmp::tool
