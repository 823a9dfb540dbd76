// JSON forms of a run analysis, shared by `report --json`, `diff --json` and the HTML report so a
// figure has one name everywhere. Times are nanoseconds since the profiler started; sizes bytes.
#pragma once

#include <nlohmann/json.hpp>

#include "run_analysis.h"

namespace gmp::analysis {

nlohmann::json live_set_json(const LiveSet& set, uint64_t start_ns, size_t max_sites = 20);
nlohmann::json peak_json(const PeakPoint& p);
nlohmann::json marker_json(const Marker& m);
// {"t_ns":[...], "allocated_max":[...], "allocated_min":[...], ...}; where the bridge attached also "tensors_max",
// "framework_reserved_max", "tensors_last" and "framework_reserved_last", and where categories were
// decided "tensor_categories": {category: [bytes per bucket]}, adding up to tensors_max.
nlohmann::json timeline_json(const DeviceAnalysis& d);
// Attribution (docs/attribution.md, "Reading"): frames, call sites, flame graphs, ranges, marks.
nlohmann::json frame_json(const Frame& f);
nlohmann::json sites_json(const std::vector<CallSite>& sites, const StackTable& stacks);
nlohmann::json flame_json(const FlameNode& n);  // {"name", "value", "children": [...]}, biggest first
nlohmann::json ranges_json(const Regions& r);
nlohmann::json marks_json(const Regions& r);
nlohmann::json pauses_json(const Regions& r);
// Per device peaks, live sets, call sites and flame graph; leaks, markers, ranges, marks and
// pauses; the timeline only when asked (it is long). Where the bridge attached, per device
// "framework" (summary.json's object with the tensors live at its peak and their call sites) and
// "tensor_leaks"; "framework_notes" when there is something to say (framework_notes.h).
nlohmann::json analysis_json(const RunAnalysis& run, bool with_timeline);

}  // namespace gmp::analysis
