#include "figure_sources.h"

namespace gmp::analysis {
namespace {

FigureSource summary_source(const reader::RunDirectory& run) {
  return run.summary_rebuilt ? FigureSource::RebuiltSummary : FigureSource::Summary;
}

// Totals and peaks as summary.json counted them; final_stats.nvml stays the replay's (the list
// above names NVML among the replay's figures).
void take_summary_totals(RunAnalysis& run) {
  for (const DeviceFigures& f : run.run.figures.devices) {
    const DeviceStats& s = f.stats;
    if (s.device < 0) continue;
    DeviceAnalysis& d = run.devices[s.device];
    d.device = s.device;
    const DeviceStats::Telemetry nvml = d.final_stats.nvml;
    d.final_stats = s;
    d.final_stats.nvml = nvml;
    d.allocated_peak.bytes = s.allocated.peak;
    d.allocated_peak.at_ns = s.allocated_peak_ns;
    d.reserved_peak.bytes = s.reserved.peak;
    d.reserved_peak.at_ns = s.reserved_peak_ns;
  }
}

void take_summary_framework(RunAnalysis& run) {
  for (const DeviceFigures& f : run.run.figures.devices) {
    auto it = run.devices.find(f.stats.device);
    if (it != run.devices.end() && f.stats.framework.attached) it->second.framework = f.stats.framework;
  }
}

// The replay's framework figures, its peak times (event clock) made times since the profiler
// started, as the summary's are.
void take_replay_framework(RunAnalysis& run) {
  for (auto& [_, d] : run.devices) {
    FrameworkStats& f = d.framework = d.final_stats.framework;
    for (uint64_t* t : {&f.allocated_peak_ns, &f.reserved_peak_ns, &f.outside_peak_ns}) *t = since(*t, run.start_ns);
  }
}

}  // namespace

FigureSources figure_sources(const reader::RunDirectory& run, const reader::Window& window) {
  FigureSources s;
  if (!window.whole()) return s;
  if (run.events.trace_incomplete()) s.totals = summary_source(run);
  s.framework = summary_source(run);
  return s;
}

void take_figures(RunAnalysis& run, const FigureSources& sources) {
  if (sources.totals != FigureSource::Replay) take_summary_totals(run);
  if (sources.framework != FigureSource::Replay) {
    take_summary_framework(run);
  } else {
    take_replay_framework(run);
  }
  for (const DeviceFigures& f : run.run.figures.devices) {
    auto it = run.devices.find(f.stats.device);
    if (it != run.devices.end() && f.stats.device >= 0 && !f.name.empty()) it->second.name = f.name;
  }
}

}  // namespace gmp::analysis
