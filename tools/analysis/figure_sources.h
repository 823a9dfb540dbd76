// Where each of a run's figures comes from: summary.json, the summary rebuilt from the trace (the
// process died before writing one), or the replay. Decided in one step, after the first pass, so
// that no figure is overridden anywhere else:
//  - totals and peaks (a device's final figures less NVML's, its peaks' bytes and times): the
//    replay's, unless the run is whole and the trace lacks events summary.json counted (a failed
//    write, a file cut short), when the replay would understate them; what was live when, which
//    only the events can tell, stays the replay's, and the report says so
//    (reader::event_count_warnings);
//  - the framework level: the summary's (either kind) for the whole run, the replay's for a
//    window, as the summary's figures are the whole run's;
//  - the devices' names: always the summary's; the trace has none.
// Markers, NVML's figures, limits, timelines and live sets are the replay's alone.
#pragma once

#include "run_analysis.h"
#include "run_directory_reader.h"
#include "trace_replay.h"

namespace gmp::analysis {

enum class FigureSource { Replay, Summary, RebuiltSummary };

struct FigureSources {
  FigureSource totals = FigureSource::Replay;
  FigureSource framework = FigureSource::Replay;
};

// `window`: what the replay covered (RunAnalysis::window after the first pass).
FigureSources figure_sources(const reader::RunDirectory& run, const reader::Window& window);

// Puts the summary's figures in place of the replay's in `run` where `sources` says so, and names
// its devices. `run.devices` holds the replay's devices; where the totals are the summary's, a
// device only the summary has is added.
void take_figures(RunAnalysis& run, const FigureSources& sources);

}  // namespace gmp::analysis
