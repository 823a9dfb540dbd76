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
#include "count_text.h"
#include "framework_notes.h"
#include "human_text.h"
#include "job_view.h"
#include "json_text.h"
#include "output_streams.h"
#include "process_facts.h"
#include "report_attribution.h"
#include "report_categories.h"
#include "report_device_limit.h"
#include "run_analysis.h"

namespace gmp::tool {
namespace {

constexpr size_t kMarkersShown = 20;

using ull = unsigned long long;

// The label of summary.json's figures in a window's report, which are the whole run's.
const char* whole_run(const analysis::RunAnalysis& run) { return run.window.whole() ? "" : " (whole run)"; }

// One allocation's row (and its call site); `size` is its size cell ("384.00 MiB", "384.00 MiB ×4"
// for identical rows collapsed), padded to `size_width`.
std::string allocation_row(const analysis::RunAnalysis& run, const LiveAllocation& a,
                           const std::vector<analysis::CallSite>& sites, bool with_device, const std::string& size,
                           size_t size_width) {
  const uint64_t start_ns = run.start_ns;
  std::string row = "      " + pad(size, size_width) + " " + pad(analysis::allocation_kind_label(a), 7) + " ";
  if (with_device) row += "device " + pad(std::to_string(a.device), 2) + " ";
  row += pad(api_name(a.api), 16) + " at " +
         pad(human_duration_ns(a.timestamp_ns > start_ns ? a.timestamp_ns - start_ns : 0), 10) + " thread " +
         std::to_string(a.thread_id);
  // Its call site, named as in the "by call site" lists below (with its caller where they split it):
  // on the row when it fits, else on a line of its own, its middle elided to fit.
  if (a.stack_id != 0) {
    const std::string site = analysis::site_label_among(a.stack_id, run.stacks, sites);
    const size_t width = output_width();
    if (display_width(row) + 2 + display_width(site) <= width) {
      row += "  " + site;
    } else {
      constexpr size_t kSiteIndent = 8;
      row += "\n" + std::string(kSiteIndent, ' ') + elide_middle(site, width > kSiteIndent ? width - kSiteIndent : 1);
    }
  }
  return row;
}

void print_by_kind(const analysis::LiveSet& set) {
  for (int k = 1; k < kKindCount; ++k) {
    const analysis::Bytes& b = set.by_kind[k];
    if (b.count == 0) continue;
    std::printf("      %-8s %-11s in %s\n", std::string(kind_name(static_cast<Kind>(k))).c_str(),
                bytes_text(b.bytes).c_str(), grouped(b.count).c_str());
  }
}

// The largest allocations of `set` and its call sites, as every "live" list shows them.
void print_largest(const analysis::RunAnalysis& run, const analysis::LiveSet& set,
                   const std::vector<analysis::CallSite>& sites, bool with_device) {
  std::printf("    largest:\n");
  // Neighbours alike but for their time (a layer's equal buffers from one line: size, kind, API,
  // device, thread and stack) are one row with their count, "384.00 MiB ×4", at the first one's time.
  auto alike = [](const LiveAllocation& a, const LiveAllocation& b) {
    return a.size == b.size && a.kind == b.kind && a.api == b.api && a.device == b.device &&
           a.thread_id == b.thread_id && a.stack_id == b.stack_id && a.pool == b.pool &&
           a.free_requested == b.free_requested;
  };
  std::vector<std::pair<const LiveAllocation*, size_t>> rows;
  for (const LiveAllocation& a : set.largest) {
    if (!rows.empty() && alike(*rows.back().first, a)) {
      ++rows.back().second;
      continue;
    }
    rows.push_back({&a, 1});
  }
  size_t width = 11;
  auto size_cell = [](const std::pair<const LiveAllocation*, size_t>& r) {
    return bytes_text(r.first->size) + (r.second > 1 ? " \u00d7" + std::to_string(r.second) : "");
  };
  for (const auto& r : rows) width = std::max(width, display_width(size_cell(r)));
  for (const auto& r : rows) {
    std::printf("%s\n", allocation_row(run, *r.first, sites, with_device, size_cell(r), width).c_str());
  }
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
    say(r.meaning,
        "    " + pad(r.name, 16) + " " + pad(peak, 31) + " at exit " + pad(r.at_exit ? bytes_text(*r.at_exit) : "?", 11) +
            " ",
        std::string(4 + 17, ' '));
  }
  if (!f.private_pools.empty()) {
    uint64_t reserved = 0, reserved_peaks = 0, tensors = 0;
    for (const auto& [_, p] : f.private_pools) {
      reserved += p.reserved.current;
      reserved_peaks += p.reserved.peak;
      tensors += p.allocated.current;
    }
    say("private pools (torch.cuda.graph, torch.compile's CUDA graphs, MemPool): " +
            counted(f.private_pools.size(), "pool") + " reserve " + bytes_text(reserved) + " at exit, " +
            bytes_text(reserved_peaks) + " at their peaks; " + bytes_text(tensors) + " of it in live tensors",
        "    ", "      ");
  }
  say(counted(f.tensor_allocs, "tensor") + " allocated, " + grouped(f.tensor_frees) + " freed; " +
          counted(f.segment_allocs, "segment") + " reserved, " + grouped(f.segment_frees) + " released; " +
          counted(f.ooms, "OOM"),
      "    ", "      ");
  const analysis::LiveSet& live = d.tensors_at_peak;
  if (live.total.count > 0) {
    std::printf("  tensors live at %s's allocated peak: %s, %s\n", fw.c_str(),
                counted(live.total.count, "tensor").c_str(), bytes_text(live.total.bytes).c_str());
    print_largest(run, live, d.tensor_sites_at_peak, false);
  }
  const bool setting = run.run.manifest.config.categories;
  print_categories("at the tensor peak", d.categories_at_peak, setting);
  print_categories(run.window.until_ns ? "at the window's end" : "at exit", d.categories_at_exit, setting);
}

void print_device(const analysis::RunAnalysis& run, const analysis::DeviceAnalysis& d) {
  const DeviceStats& s = d.final_stats;
  std::printf("\ndevice %d  %s  (%s total)\n", d.device, d.name.empty() ? "?" : d.name.c_str(),
              bytes_text(s.total_bytes).c_str());
  if (d.framework.attached) {
    say("driver level (what the CUDA driver handed out; " + analysis::framework_display_name(run) +
            "'s segments count as allocated here):",
        "  ", "    ");
  }
  std::printf("  allocated  peak %-11s at %s final %s\n", bytes_text(d.allocated_peak.bytes).c_str(),
              pad(human_duration_ns(d.allocated_peak.at_ns), 10).c_str(), bytes_text(s.allocated.current).c_str());
  std::printf("  reserved   peak %-11s at %s final %s\n", bytes_text(d.reserved_peak.bytes).c_str(),
              pad(human_duration_ns(d.reserved_peak.at_ns), 10).c_str(), bytes_text(s.reserved.current).c_str());
  std::printf("    %-8s %-12s %-12s %-10s %s\n", "kind", "peak", "final", "allocs", "frees");
  for (Kind k : kDeviceKinds) {
    const KindStats& ks = s.kind(k);
    if (ks.allocs == 0 && ks.bytes.peak == 0) continue;
    std::printf("    %-8s %-12s %-12s %-10s %s\n", std::string(kind_name(k)).c_str(),
                bytes_text(ks.bytes.peak).c_str(), bytes_text(ks.bytes.current).c_str(), grouped(ks.allocs).c_str(),
                grouped(ks.frees).c_str());
  }
  if (s.pool_reserved.peak > 0) {
    std::printf("    pools reserved peak %s, final %s\n", bytes_text(s.pool_reserved.peak).c_str(),
                bytes_text(s.pool_reserved.current).c_str());
  }
  if (s.vmm_physical.peak > 0) {
    std::printf("    vmm physical peak %s, final %s\n", bytes_text(s.vmm_physical.peak).c_str(),
                bytes_text(s.vmm_physical.current).c_str());
  }
  if (s.graph_reserved.peak > 0) {
    say("graph memory pool reserved peak " + bytes_text(s.graph_reserved.peak) + " (the driver's high watermark), " +
            bytes_text(d.reserved_peak.kind_bytes[static_cast<size_t>(Kind::Graph)]) +
            " at the device's reserved peak, final " + bytes_text(s.graph_reserved.current),
        "    ", "      ");
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
    std::string nvml = "NVML: this process used at most " + bytes_text(d.nvml_process_peak) +
                       " of the device (tracked reserved peak " + bytes_text(tracked);
    if (d.nvml_process_peak > tracked) {
      nvml += "; " + bytes_text(d.nvml_process_peak - tracked) +
              " more is the CUDA context, loaded modules and memory not allocated through the tracked calls";
    }
    say(nvml + ")", "  ", "    ");
  } else if (d.nvml_device_used_peak > 0) {
    say("NVML: device used at most " + bytes_text(d.nvml_device_used_peak) +
            " by all processes (this process's share not reported)",
        "  ", "    ");
  }
  print_device_limit(d);
  say("allocations " + grouped(s.alloc_count) + ", frees " + grouped(s.free_count) + ", failed allocations " +
          grouped(s.failed_alloc_count) + (run.window.whole() ? "" : " (from the run's start to the window's end)"),
      "  ", "    ");
}

void print_markers(const analysis::RunAnalysis& run, bool (*wanted)(analysis::Marker::Type)) {
  size_t shown = 0, total = 0;
  for (const analysis::Marker& m : run.markers) {
    if (!wanted(m.type)) continue;
    ++total;
    if (shown >= kMarkersShown) continue;
    ++shown;
    std::string lead = "    at " + pad(human_duration_ns(m.at_ns), 10) + " ";
    if (m.device >= 0) lead += "device " + pad(std::to_string(m.device), 2) + " ";
    std::string label = marker_label(m);
    if (m.type == analysis::Marker::Type::AlertFired || m.type == analysis::Marker::Type::AlertCleared) {
      label += " (allocated " + bytes_text(m.size) + ", reserved " + bytes_text(m.reserved) + ")";
    }
    say(label, lead, "      ");
  }
  if (total > shown) std::printf("    ... and %llu more (--json lists them)\n", (ull)(total - shown));
}

// CUDA graphs (docs/report.md, "CUDA graphs"): what each graph allocates per launch, where it was
// captured and how often it ran; the graph memory pool's figures are in each device's section.
void print_graphs(const analysis::RunAnalysis& run) {
  const Summary& s = run.run.figures;
  if (s.graphs_total == 0) return;
  uint64_t launches = 0, with_memory = 0;
  for (const Summary::Graph& g : s.graphs) {
    launches += g.launches;
    if (g.alloc_nodes > 0) ++with_memory;
  }
  std::printf("\nCUDA graphs%s: %s, %s with memory nodes, %s\n", whole_run(run), grouped(s.graphs_total).c_str(),
              grouped(with_memory).c_str(), counted(launches, "launch").c_str());
  size_t shown = 0;
  for (const Summary::Graph& g : s.graphs) {
    if (g.alloc_nodes == 0 && g.free_nodes == 0 && s.graphs.size() > analysis::kGraphsShown) continue;
    if (shown++ >= analysis::kGraphsShown) break;
    std::string text = g.origin == "capture" ? "captured" : "built with cuGraphAdd*";
    if (!g.capture_mode.empty()) text += " (" + g.capture_mode + " mode)";
    if (g.device >= 0) text += " on device " + std::to_string(g.device);
    text += ": " + counted(g.alloc_nodes, "allocation node") + ", " + bytes_text(g.bytes_per_launch) + " per launch";
    if (g.outliving_bytes > 0) text += " (" + bytes_text(g.outliving_bytes) + " outlive it)";
    text += "; " + counted(g.launches, "launch") + " on " + counted(g.streams, "stream");
    if (g.failed_launches > 0) text += ", " + counted(g.failed_launches, "failed launch");
    if (g.stack_id != 0) text += "; captured at " + analysis::site_label(static_cast<uint32_t>(g.stack_id), run.stacks);
    say(text, "  #" + pad(std::to_string(g.number), 4) + " ", "        ");
  }
  if (s.graphs_total > shown) {
    std::printf("  ... and %s more (summary.json lists %s)\n", grouped(s.graphs_total - shown).c_str(),
                grouped(s.graphs.size()).c_str());
  }
}

bool is_failure(analysis::Marker::Type t) { return t == analysis::Marker::Type::AllocFailed; }
bool is_oom_event(analysis::Marker::Type t) {
  return t == analysis::Marker::Type::OomBundle || t == analysis::Marker::Type::OomRecovered;
}
bool is_alert(analysis::Marker::Type t) {  // and the watchdog's cleanups, which follow critical alerts
  return t == analysis::Marker::Type::AlertFired || t == analysis::Marker::Type::AlertCleared ||
         t == analysis::Marker::Type::Cleanup;
}

// Why call sites may be missing or partly unnamed; silent for runs that recorded no stacks.
void print_attribution_notes(const analysis::RunAnalysis& run) {
  const reader::Attribution& a = run.attribution;
  if (run.stack_events > 0 && !a.present) {
    say("note: allocations carry stack ids but attribution.jsonl is missing; call sites are not named", "  ", "    ");
  }
  if (a.skipped_lines > 0 || a.partial_last_line) {
    say("note: attribution.jsonl: " + grouped(a.skipped_lines) + " unreadable lines skipped" +
            (a.partial_last_line ? ", and a partial last line (the process was killed mid-write)" : ""),
        "  ", "    ");
  }
}

// Leaks: what was still allocated at exit. Where the bridge attached, the tensors are the leaks and
// the framework's segments its cache (docs/report.md, "Leaks"); the driver-level list then holds
// only what lies outside those segments. A process that died (or called exec) made no leaks: its
// memory is what was live when it ended (docs/report.md, "How the process ended").
void print_leaks(const analysis::RunAnalysis& run) {
  const analysis::ProcessEnd end = analysis::process_end(run.run);
  const bool at_exit = !run.window.whole() || end.exited();
  const std::string heading = run.window.whole() ? end.live_at_end() : "at the window's end";
  const Summary::Framework* fw = analysis::attached_framework(run);
  if (fw != nullptr) {
    const analysis::LiveSet& t = run.tensor_leaks;
    const std::string name = analysis::framework_display_name(run);
    std::printf("%s: %s (%s) still allocated%s\n", heading.c_str(), counted(t.total.count, "tensor").c_str(),
                bytes_text(t.total.bytes).c_str(), run.window.whole() && at_exit ? " at exit" : "");
    if (t.total.count > 0) print_largest(run, t, run.tensor_leak_sites, true);
    std::printf("  %s held %s cached at exit%s in %s (its cache, not a leak)\n", name.c_str(),
                bytes_text(fw->cached_at_exit_bytes).c_str(), whole_run(run),
                counted(fw->cached_at_exit_count, "segment").c_str());
    std::printf("  outside %s: ", name.c_str());
  } else {
    std::printf("%s: ", heading.c_str());
  }
  std::printf("%s%s, %s\n", at_exit ? "live at exit " : "", counted(run.leaks.total.count, "allocation").c_str(),
              bytes_text(run.leaks.total.bytes).c_str());
  if (run.leaks.total.count > 0) {
    print_by_kind(run.leaks);
    print_largest(run, run.leaks, run.leak_sites, true);
  }
}

void print_text(const analysis::RunAnalysis& run) {
  const Summary& s = run.run.figures;
  std::printf("gpumemprof report: %s\n", run.run.path.c_str());
  // How the process ended comes first: it says what the memory live at its end means.
  say(analysis::process_end(run.run).text(), "  ", "    ");
  if (!run.window.whole()) {
    say("window: " + window_text(run.window) +
            " since the profiler started; peaks, live sets, markers and ranges are the window's, figures marked "
            "(whole run) are summary.json's",
        "  ", "  ");
  }
  if (const auto& t = s.trace; t && t->segments_dropped > 0) {
    say("trace: kept from " + human_duration_ns(t->kept_from_ns) + " on; its oldest " + grouped(t->segments_dropped) +
            " segments (" + grouped(t->events_dropped) + " events) were deleted to stay within GPUMEMPROF_TRACE_MAX=" +
            bytes_text(t->max_bytes),
        "  ", "  ");
  }
  if (run.run.has_manifest) {
    // One line whatever its width, as the title's: the executable's path is never cut.
    std::printf("  process %s (pid %llu), %s of CUDA activity\n", analysis::program_title(run.run.manifest).c_str(),
                (ull)run.run.manifest.pid.value_or(0), human_duration_ns(run.duration_ns).c_str());
  }
  if (run.run.summary_rebuilt && run.run.events.final_flush) {
    say("note: " + run.run.rebuild_reason + "; figures rebuilt from the trace", "  ", "    ");
  }
  for (const std::string& w : reader::event_count_warnings(run.run.events)) say("note: " + w, "  ", "    ");
  if (run.truncated_bytes) {
    say("note: trace.gmpt ends in a partial record of " + grouped(run.truncated_bytes) +
            " bytes (a write cut short); it is ignored",
        "  ", "    ");
  }
  print_attribution_notes(run);
  if (const std::string state = analysis::framework_state_line(run); !state.empty()) {
    say("framework: " + state, "  ", "    ");
  }
  for (const std::string& n : analysis::hidden_memory_notes(run)) say("note: " + n, "  ", "    ");
  if (run.devices.empty()) std::printf("\nno device memory was allocated\n");
  for (const auto& [ordinal, d] : run.devices) print_device(run, d);
  print_graphs(run);

  // Whole runs keep summary.json's figure, which a trace that lacks events understates.
  const Counter& pinned = run.window.whole() ? s.host_pinned_bytes : run.host_pinned;
  std::printf("\npinned host memory  peak %s, final %s\n", bytes_text(pinned.peak).c_str(),
              bytes_text(pinned.current).c_str());
  print_leaks(run);
  const uint64_t failed = s.failed_allocations.size();
  uint64_t failed_total = 0;
  for (const auto& [_, d] : run.devices) failed_total += d.final_stats.failed_alloc_count;
  std::printf("failed allocations%s: %s\n", whole_run(run), grouped(std::max<uint64_t>(failed, failed_total)).c_str());
  print_markers(run, is_failure);
  const uint64_t bundles = s.oom.bundles_written;
  const std::vector<std::string> oom = oom_count_parts(s);
  if (oom.empty()) std::printf("OOM%s: no out-of-memory failure\n", whole_run(run));
  for (size_t i = 0; i < oom.size(); ++i) {  // one count a line, each saying what it counts
    say(i == 0 ? "OOM" + std::string(whole_run(run)) + ": " + oom[i] : oom[i], i == 0 ? "" : "    ", "      ");
  }
  print_markers(run, is_oom_event);
  if (bundles > 0) say("explain with: gpumemprof oom " + run.run.path, "    ", "      ");
  std::printf("alerts%s: %s fired\n", whole_run(run), counted(s.alerts.fired(), "alert").c_str());
  print_markers(run, is_alert);
  if (run.markers_dropped > 0)
    std::printf("  (%s more events of these kinds were not kept)\n", grouped(run.markers_dropped).c_str());
  print_ranges(run);
  print_marks(run);
  print_pauses(run);
  say("events" + std::string(whole_run(run)) + ": " + reader::event_counts_line(run.run.events), "", "  ");
}

}  // namespace

int report_main(int argc, char** argv) {
  PathArgs args;
  analysis::Options options;
  if (auto status = take_window_args("report", argc, argv, options.window)) return *status;
  if (auto status = parse_path_args(kReportOptions, argc, argv, args)) return *status;
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
  if (run) {
    if (auto past = window_past_end(run->window, run->duration_ns)) error = *past, run.reset();
  }
  if (!run) {
    std::fprintf(stderr, "gpumemprof report: %s\n", error.c_str());
    return 2;
  }
  if (json) {
    nlohmann::json out = run->run.summary;
    out["rebuilt_from_trace"] = run->run.summary_rebuilt;
    out["analysis"] = analysis::analysis_json(*run, false);
    stdout_carries_data();
    std::printf("%s\n", json_text(out, 2).c_str());
  } else {
    print_text(*run);
  }
  return 0;
}

}  // namespace gmp::tool
