#include "analysis_json.h"

#include <algorithm>
#include <cstdio>

#include "category_json.h"
#include "framework_notes.h"
#include "json_views.h"
#include "oom_bundle_schema.h"
#include "process_facts.h"

namespace gmp::analysis {
namespace {


nlohmann::json bytes_json(const Bytes& b) { return {{"bytes", b.bytes}, {"count", b.count}}; }

template <typename PerKind, typename ToJson>
nlohmann::json by_kind_json(const PerKind& per_kind, ToJson to_json) {
  nlohmann::json out = nlohmann::json::object();
  for (int k = 1; k < kKindCount; ++k) out[std::string(kind_name(static_cast<Kind>(k)))] = to_json(per_kind[k]);
  return out;
}

}  // namespace

nlohmann::json live_set_json(const LiveSet& set, uint64_t start_ns, size_t max_sites) {
  nlohmann::json largest = nlohmann::json::array();
  for (const LiveAllocation& a : set.largest) {
    nlohmann::json j = to_json(oom_allocation(a, a.timestamp_ns));  // an OOM bundle's form, less the age
    j.erase("age_ms");
    j["at_ns"] = since(a.timestamp_ns, start_ns);
    largest.push_back(std::move(j));
  }
  std::vector<std::pair<uint32_t, Bytes>> sites(set.by_stack.begin(), set.by_stack.end());
  std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) {
    return a.second.bytes != b.second.bytes ? a.second.bytes > b.second.bytes : a.first < b.first;
  });
  if (sites.size() > max_sites) sites.resize(max_sites);
  nlohmann::json by_stack = nlohmann::json::array();
  for (const auto& [id, b] : sites) by_stack.push_back({{"stack_id", id}, {"bytes", b.bytes}, {"count", b.count}});
  return {{"count", set.total.count},
          {"bytes", set.total.bytes},
          {"by_kind", by_kind_json(set.by_kind, bytes_json)},
          {"by_stack", by_stack},
          {"largest", largest}};
}

nlohmann::json peak_json(const PeakPoint& p) {
  return {{"bytes", p.bytes},
          {"at_ns", p.at_ns},
          {"by_kind", by_kind_json(p.kind_bytes, [](uint64_t b) { return nlohmann::json(b); })}};
}

nlohmann::json marker_json(const Marker& m) {
  nlohmann::json j = {{"at_ns", m.at_ns}, {"device", m.device}};
  switch (m.type) {
    case Marker::Type::AlertFired:
    case Marker::Type::AlertCleared:
      j["type"] = m.type == Marker::Type::AlertFired ? "alert" : "alert_cleared";
      j["alert"] = alert_type_name(m.alert);
      j["allocated"] = m.size;
      j["reserved"] = m.reserved;
      j["threshold"] = m.threshold;
      break;
    case Marker::Type::AllocFailed:
      j["type"] = "alloc_failed";
      j["api"] = std::string(api_name(m.api));
      j["size"] = m.size;
      j["error"] = cuda_error_name(m.result);
      break;
    case Marker::Type::OomBundle: j["type"] = "oom_bundle"; break;
    case Marker::Type::OomRecovered: j["type"] = "oom_recovered"; break;
    case Marker::Type::Cleanup:
      j["type"] = "cleanup";
      j["bytes_released"] = m.size;
      j["pools_trimmed"] = m.threshold;
      break;
  }
  return j;
}

namespace {

// A category array per category that is ever non-zero in the slices, from `field` of each.
nlohmann::json fine_categories(const FineTimeline& fine, CategoryBytes FineSlice::*field) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t c = 0; c < kTensorCategoryCount; ++c) {
    nlohmann::json values = nlohmann::json::array();
    bool any = false;
    for (const FineSlice& s : fine.slices()) {
      values.push_back((s.*field)[c]);
      any = any || (s.*field)[c] != 0;
    }
    if (any) out[std::string(tensor_category_name(static_cast<TensorCategory>(c)))] = std::move(values);
  }
  return out;
}

}  // namespace

// The finer level (fine_timeline.h) in arrays, as the coarse one: kept slices only, by index.
nlohmann::json fine_json(const FineTimeline& fine, bool framework, bool categories) {
  using Field = uint64_t FineSlice::*;
  std::vector<std::pair<const char*, Field>> fields = {
      {"index", &FineSlice::index},
      {"allocated_min", &FineSlice::allocated_min},
      {"allocated_max", &FineSlice::allocated_max},
      {"allocated_last", &FineSlice::allocated_last},
      {"reserved_min", &FineSlice::reserved_min},
      {"reserved_max", &FineSlice::reserved_max},
      {"reserved_last", &FineSlice::reserved_last},
      {"nvml_process_max", &FineSlice::nvml_process_max}};
  if (framework) {
    fields.insert(fields.end(), {{"tensors_max", &FineSlice::tensors_max},
                                 {"tensors_last", &FineSlice::tensors_last},
                                 {"framework_reserved_max", &FineSlice::framework_reserved_max},
                                 {"framework_reserved_last", &FineSlice::framework_reserved_last}});
  }
  nlohmann::json j = {{"origin_ns", fine.origin_ns()}, {"width_ns", fine.width_ns()}};
  for (const auto& [key, field] : fields) {
    nlohmann::json values = nlohmann::json::array();
    for (const FineSlice& s : fine.slices()) values.push_back(s.*field);
    j[key] = std::move(values);
  }
  if (framework && categories) {  // the tensors stacked by category when zoomed in, as tensor_categories
    j["tensor_categories_at_max"] = fine_categories(fine, &FineSlice::categories_at_max);
    j["tensor_categories_last"] = fine_categories(fine, &FineSlice::categories_last);
  }
  return j;
}

nlohmann::json timeline_json(const DeviceAnalysis& d) {
  nlohmann::json t = {{"t_ns", nlohmann::json::array()},          {"allocated_max", nlohmann::json::array()},
                      {"reserved_max", nlohmann::json::array()},  {"allocated_last", nlohmann::json::array()},
                      {"reserved_last", nlohmann::json::array()}, {"nvml_process_max", nlohmann::json::array()},
                      {"allocated_min", nlohmann::json::array()}, {"reserved_min", nlohmann::json::array()}};
  for (const TimelineBucket& b : d.timeline) {
    t["t_ns"].push_back(b.start_ns);
    t["allocated_max"].push_back(b.allocated_max);
    t["reserved_max"].push_back(b.reserved_max);
    t["allocated_min"].push_back(b.allocated_min);
    t["reserved_min"].push_back(b.reserved_min);
    t["allocated_last"].push_back(b.allocated_last);
    t["reserved_last"].push_back(b.reserved_last);
    t["nvml_process_max"].push_back(b.nvml_process_max);
  }
  const bool decided = d.categories_at_exit.decided || d.categories_at_peak.decided;
  if (!d.fine.slices().empty()) t["fine"] = fine_json(d.fine, d.framework.attached, decided);
  if (!d.framework.attached) return t;
  for (const char* key : {"tensors_max", "framework_reserved_max", "tensors_last", "framework_reserved_last"}) {
    t[key] = nlohmann::json::array();
  }
  for (const TimelineBucket& b : d.timeline) {
    t["tensors_max"].push_back(b.tensors_max);
    t["framework_reserved_max"].push_back(b.framework_reserved_max);
    t["tensors_last"].push_back(b.tensors_last);
    t["framework_reserved_last"].push_back(b.framework_reserved_last);
  }
  if (!decided) return t;
  nlohmann::json categories = nlohmann::json::object();  // stacked, they draw tensors_max
  for (size_t c = 0; c < kTensorCategoryCount; ++c) {
    nlohmann::json values = nlohmann::json::array();
    for (const TimelineBucket& b : d.timeline) values.push_back(b.categories[c]);
    categories[std::string(tensor_category_name(static_cast<TensorCategory>(c)))] = std::move(values);
  }
  t["tensor_categories"] = std::move(categories);
  return t;
}

nlohmann::json frame_json(const Frame& f) {
  nlohmann::json j = {{"label", f.label()}, {"python", f.python}};
  if (!f.function.empty()) j["function"] = f.function;
  if (!f.file.empty()) {
    j["file"] = f.file;
    j["line"] = f.line;
  }
  if (!f.python) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(f.address));
    j["address"] = buf;
    if (!f.module.empty()) {
      j["module"] = f.module;
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(f.offset));
      j["offset"] = buf;
    }
    if (f.inlined) j["inlined"] = true;
  }
  if (!f.note.empty()) j["note"] = f.note;
  return j;
}

nlohmann::json sites_json(const std::vector<CallSite>& sites, const StackTable& stacks) {
  nlohmann::json out = nlohmann::json::array();
  for (const CallSite& s : sites) {
    nlohmann::json frames = nlohmann::json::array();
    if (auto it = stacks.find(s.stack_id); it != stacks.end()) {
      for (const Frame& f : it->second) frames.push_back(frame_json(f));
    }
    out.push_back({{"site", s.label},
                   {"bytes", s.bytes.bytes},
                   {"count", s.bytes.count},
                   {"stacks", s.stacks},
                   {"stack_id", s.stack_id},
                   {"site_frame", s.site_frame},
                   {"frames", frames}});
  }
  return out;
}

nlohmann::json flame_json(const FlameNode& n) {
  nlohmann::json children = nlohmann::json::array();
  std::vector<const FlameNode*> order;
  for (const FlameNode& c : n.children) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(),
                   [](const FlameNode* a, const FlameNode* b) { return a->value > b->value; });
  for (const FlameNode* c : order) children.push_back(flame_json(*c));
  nlohmann::json j = {{"name", n.name}, {"value", n.value}, {"children", children}};
  if (n.python) j["python"] = true;
  return j;
}

namespace {
// A level's figures: the driver's at the row's top level, the tensors' under "tensors" (null
// without the bridge).
nlohmann::json figures_json(const RangeFigures& f) {
  return {{"bytes_allocated", f.bytes_allocated},
          {"allocations", f.allocations},
          {"peak_above_entry", f.peak_above_entry},
          {"net_change", f.net_change}};
}
nlohmann::json figures_json(const MarkFigures& f) {
  return {{"allocated", f.allocated},
          {"peak_since_previous", f.peak_since_previous},
          {"peak_so_far", f.peak_so_far},
          {"growth", f.growth}};
}
}  // namespace

nlohmann::json ranges_json(const Regions& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const RangeRow& row : r.ranges) {
    nlohmann::json j = {{"name", row.name},
                        {"calls", row.calls},
                        {"total_ns", row.total_ns},
                        {"average_ns", row.calls ? row.total_ns / row.calls : 0},
                        {"max_ns", row.max_ns},
                        {"open_at_end", row.open_at_end}};
    j.update(figures_json(row.driver));
    j["tensors"] = r.tensors ? figures_json(row.tensors) : nlohmann::json();
    out.push_back(std::move(j));
  }
  return out;
}

namespace {
nlohmann::json mark_json(const MarkRow& m, const Regions& r) {
  nlohmann::json j = {{"name", m.name},
                      {"index", m.index},
                      {"at_ns", m.at_ns},
                      {"thread", m.thread},
                      {"largest_growth", r.largest_growth && r.largest_growth->index == m.index}};
  j.update(figures_json(m.driver));
  j["tensors"] = r.tensors ? figures_json(m.tensors) : nlohmann::json();
  return j;
}
}  // namespace

nlohmann::json marks_json(const Regions& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const MarkRow& m : r.marks) out.push_back(mark_json(m, r));
  return out;
}

nlohmann::json pauses_json(const Regions& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const PauseRow& p : r.pauses) {
    out.push_back({{"at_ns", p.at_ns},
                   {"resumed_at_ns", p.resumed ? nlohmann::json(p.resumed_at_ns) : nlohmann::json()},
                   {"duration_ns", p.resumed_at_ns > p.at_ns ? p.resumed_at_ns - p.at_ns : 0},
                   {"frees", p.frees},
                   {"allocations", p.allocations}});
  }
  return out;
}

nlohmann::json analysis_json(const RunAnalysis& run, bool with_timeline) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& [ordinal, d] : run.devices) {
    nlohmann::json j = {
        {"device", ordinal},
        {"name", d.name},
        {"total_bytes", d.final_stats.total_bytes},
        {"allocated_peak", peak_json(d.allocated_peak)},
        {"reserved_peak", peak_json(d.reserved_peak)},
        {"live_at_peak", live_set_json(d.live_at_peak, run.start_ns)},
        {"nvml_process_peak", d.nvml_process_peak ? nlohmann::json(d.nvml_process_peak) : nlohmann::json()},
        {"nvml_device_used_peak",
         d.nvml_device_used_peak ? nlohmann::json(d.nvml_device_used_peak) : nlohmann::json()}};
    if (with_timeline) j["timeline"] = timeline_json(d);
    j["sites_at_peak"] = sites_json(d.sites_at_peak, run.stacks);
    j["flame"] = flame_json(d.flame);
    if (d.framework.attached) {  // peak times are held since the profiler started
      j["framework"] = framework_json(d.framework, 0);
      j["framework"]["tensors_at_peak"] = live_set_json(d.tensors_at_peak, run.start_ns);
      j["framework"]["tensor_sites_at_peak"] = sites_json(d.tensor_sites_at_peak, run.stacks);
      const bool setting = run.run.manifest.config.categories;
      j["framework"]["categories_at_peak"] = category_split_json(d.categories_at_peak, setting);
      j["framework"]["categories_at_exit"] = category_split_json(d.categories_at_exit, setting);
      nlohmann::json peaks = nlohmann::json::object();
      for (size_t c = 0; c < kTensorCategoryCount; ++c) {
        peaks[std::string(tensor_category_name(static_cast<TensorCategory>(c)))] = d.category_peaks[c];
      }
      j["framework"]["category_peaks"] = std::move(peaks);
    }
    devices.push_back(std::move(j));
  }
  nlohmann::json markers = nlohmann::json::array();
  for (const Marker& m : run.markers) markers.push_back(marker_json(m));
  const Regions& r = run.regions;
  const reader::Attribution& a = run.attribution;
  nlohmann::json out = {{"process_end", process_end_json(process_end(run.run))},
          {"devices", devices},
          {"events", run.events},
          {"event_counts", reader::event_counts_json(run.run.events)},
          {"duration_ns", run.duration_ns},
          {"trace_truncated_bytes", run.truncated_bytes},
          {"leaks", live_set_json(run.leaks, run.start_ns)},
          {"pinned_at_exit", live_set_json(run.pinned_at_exit, run.start_ns)},
          {"markers", markers},
          {"markers_dropped", run.markers_dropped},
          {"leak_sites", sites_json(run.leak_sites, run.stacks)},
          {"ranges", ranges_json(r)},
          {"marks", marks_json(r)},
          {"pauses", pauses_json(r)},
          {"attribution",
           {{"file_present", a.present},
            {"records", a.records},
            {"skipped_lines", a.skipped_lines},
            {"partial_last_line", a.partial_last_line},
            {"stack_events", run.stack_events},
            {"stacks_symbolized", run.stacks.size()},
            {"unbalanced_pops", r.unbalanced_pops},
            {"ranges_open_at_end", r.open_at_end},
            {"marks_total", r.marks_total},
            {"marks_omitted", r.marks_omitted},
            {"largest_growth_mark", r.largest_growth ? mark_json(*r.largest_growth, r) : nlohmann::json()},
            {"pauses_dropped", r.pauses_dropped}}}};
  if (attached_framework(run) != nullptr) {
    out["tensor_leaks"] = live_set_json(run.tensor_leaks, run.start_ns);
    out["tensor_leak_sites"] = sites_json(run.tensor_leak_sites, run.stacks);
  }
  nlohmann::json notes = nlohmann::json::array();
  if (std::string state = framework_state_line(run); !state.empty()) notes.push_back(std::move(state));
  for (std::string& n : hidden_memory_notes(run)) notes.push_back(std::move(n));
  if (!notes.empty()) out["framework_notes"] = std::move(notes);
  // The figures above are this window's; summary.json's, beside "analysis", stay the whole run's.
  if (!run.window.whole()) {
    out["window"] = {{"since_ns", run.window.since_ns},
                     {"until_ns", run.window.until_ns ? nlohmann::json(*run.window.until_ns) : nlohmann::json()},
                     {"host_pinned_peak", run.host_pinned.peak}};
  }
  return out;
}

}  // namespace gmp::analysis
