#include "job_analysis.h"

#include <algorithm>

#include "event.h"
#include "process_facts.h"
#include "summary.h"

namespace gmp::analysis {
namespace {

using nlohmann::json;

void add_rows(size_t member, const Summary& s, std::vector<JobRow>& rows) {
  if (s.devices.empty()) {
    rows.push_back(JobRow{.member = member});
    return;
  }
  for (const DeviceFigures& d : s.devices) {
    const DeviceStats& st = d.stats;
    const FrameworkStats& fw = st.framework;
    rows.push_back(JobRow{member, st.device, d.name, st.allocated.peak, st.allocated_peak_ns, st.reserved.peak,
                          st.reserved_peak_ns, fw.attached, fw.allocated.peak, fw.allocated_peak_ns,
                          fw.reserved.peak, fw.reserved_peak_ns});
  }
}

bool has_figure(const JobRow& row, SpreadFigure f) {
  if (f == SpreadFigure::TensorsPeak || f == SpreadFigure::FrameworkReservedPeak) return row.framework;
  return row.device >= 0;
}

std::optional<Spread> spread_of(const std::vector<JobRow>& rows, SpreadFigure f) {
  Spread s{f};
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!has_figure(rows[i], f)) continue;
    if (s.rows == 0 || spread_value(rows[i], f) > spread_value(rows[s.highest], f)) s.highest = i;
    if (s.rows == 0 || spread_value(rows[i], f) < spread_value(rows[s.lowest], f)) s.lowest = i;
    ++s.rows;
  }
  if (s.rows < 2) return std::nullopt;
  return s;
}

json row_json(const JobAnalysis& job, const JobRow& r) {
  auto peak = [&](uint64_t bytes, uint64_t at_ns) {
    return json{{"bytes", bytes}, {"at_ns", at_ns}, {"job_ns", job.job_time(r.member, at_ns)}};
  };
  json j = {{"device", r.device},
            {"name", r.device_name},
            {"allocated_peak", peak(r.allocated_peak, r.allocated_peak_ns)},
            {"reserved_peak", peak(r.reserved_peak, r.reserved_peak_ns)},
            {"framework", nullptr}};
  if (r.framework) {
    j["framework"] = {{"tensors_peak", peak(r.tensors_peak, r.tensors_peak_ns)},
                      {"reserved_peak", peak(r.framework_reserved_peak, r.framework_reserved_peak_ns)}};
  }
  return j;
}

json optional_json(const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); }
json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json member_json(const JobAnalysis& job, size_t index) {
  const reader::JobMember& m = job.members[index];
  json j = {{"path", m.path}, {"report", "gpumemprof report " + m.path}};
  if (!m.run) {
    j["error"] = m.error;
    return j;
  }
  const reader::RunDirectory& run = *m.run;
  const ManifestRecord& man = run.manifest;
  const Summary& s = run.figures;
  j["error"] = nullptr;
  j["rank"] = optional_json(man.rank);
  j["local_rank"] = optional_json(man.local_rank);
  j["world_size"] = optional_json(man.world_size);
  j["launcher"] = text_or_null(man.launcher);
  j["job_id"] = text_or_null(man.job_id);
  j["host"] = man.host;
  j["pid"] = optional_json(man.pid);
  j["exe"] = man.exe;
  j["start_realtime_ns"] = man.start_realtime_ns;
  j["start_offset_ns"] = job.job_time(index, 0);
  j["rebuilt_from_trace"] = run.summary_rebuilt;
  j["process_end"] = process_end_json(process_end(run));
  j["devices"] = json::array();
  for (const JobRow& r : job.rows) {
    if (r.member == index && r.device >= 0) j["devices"].push_back(row_json(job, r));
  }
  j["oom"] = {{"failures", s.oom.failures}, {"bundles_written", s.oom.bundles_written},
              {"recovered", s.oom.recovered}, {"first", nullptr}};
  for (const JobOom& o : job.ooms) {
    if (o.member != index) continue;
    j["oom"]["first"] = {{"device", o.failure.device}, {"size", o.failure.size},
                         {"api", o.failure.api},       {"at_ns", o.failure.at_ns},
                         {"wall_ns", o.wall_ns},       {"job_ns", job.job_time(index, o.failure.at_ns)}};
  }
  j["failed_allocations"] = s.failed_allocations.size();
  j["alerts_fired"] = s.alerts.fired();
  j["events"] = reader::event_counts_json(run.events);
  return j;
}

}  // namespace

const SpreadFigureName kSpreadFigures[4] = {
    {SpreadFigure::AllocatedPeak, "allocated_peak", "allocated peak"},
    {SpreadFigure::ReservedPeak, "reserved_peak", "reserved peak"},
    {SpreadFigure::TensorsPeak, "tensors_peak", "tensors peak"},
    {SpreadFigure::FrameworkReservedPeak, "framework_reserved_peak", "framework reserved peak"},
};

uint64_t spread_value(const JobRow& row, SpreadFigure f) {
  switch (f) {
    case SpreadFigure::AllocatedPeak: return row.allocated_peak;
    case SpreadFigure::ReservedPeak: return row.reserved_peak;
    case SpreadFigure::TensorsPeak: return row.tensors_peak;
    case SpreadFigure::FrameworkReservedPeak: return row.framework_reserved_peak;
  }
  return 0;
}

uint64_t JobAnalysis::job_time(size_t member, uint64_t at_ns) const {
  const reader::JobMember& m = members[member];
  const uint64_t start = m.run ? m.run->manifest.start_realtime_ns : 0;
  if (start == 0 || start_realtime_ns == 0) return at_ns;
  return start - start_realtime_ns + at_ns;
}

std::optional<JobAnalysis> analyze_job(const std::string& root, std::string& error) {
  std::string left_out;
  auto members = reader::open_job_directory(root, error, &left_out);
  if (!members) return std::nullopt;
  JobAnalysis job = analyze_job_members(root, std::move(*members));
  job.left_out = left_out;
  return job;
}

JobAnalysis analyze_job_members(const std::string& root, std::vector<reader::JobMember> members) {
  JobAnalysis job;
  job.root = root;
  job.members = std::move(members);
  for (size_t i = 0; i < job.members.size(); ++i) {
    const reader::JobMember& m = job.members[i];
    if (!m.run) continue;
    ++job.opened;
    const uint64_t start = m.run->manifest.start_realtime_ns;
    if (start != 0 && (job.start_realtime_ns == 0 || start < job.start_realtime_ns)) job.start_realtime_ns = start;
    add_rows(i, m.run->figures, job.rows);
  }
  for (const SpreadFigureName& f : kSpreadFigures) {
    if (auto s = spread_of(job.rows, f.figure)) job.spreads.push_back(*s);
  }
  for (size_t i = 0; i < job.members.size(); ++i) {
    const reader::JobMember& m = job.members[i];
    if (!m.run) continue;
    const uint64_t start = m.run->manifest.start_realtime_ns;
    const auto& failed = m.run->figures.failed_allocations;
    auto oom =
        std::find_if(failed.begin(), failed.end(), [](const SummaryFailure& f) { return f.error == kOutOfMemory; });
    if (start != 0 && oom != failed.end()) job.ooms.push_back({i, *oom, start + oom->at_ns});
  }
  std::stable_sort(job.ooms.begin(), job.ooms.end(),
                   [](const JobOom& a, const JobOom& b) { return a.wall_ns < b.wall_ns; });
  return job;
}

std::string member_label(const reader::JobMember& m) {
  const ManifestRecord* man = m.run ? &m.run->manifest : nullptr;
  if (man != nullptr && man->rank) return "rank " + std::to_string(*man->rank);
  if (man != nullptr && man->pid) return "pid " + std::to_string(*man->pid);
  if (const auto rank = reader::rank_in_name(m.path)) return "rank " + std::to_string(*rank);
  return m.path.substr(m.path.rfind('/') + 1);
}

json job_json(const JobAnalysis& job) {
  json processes = json::array();
  for (size_t i = 0; i < job.members.size(); ++i) processes.push_back(member_json(job, i));
  json spreads = json::array();
  for (const Spread& s : job.spreads) {
    const JobRow& hi = job.rows[s.highest];
    const JobRow& lo = job.rows[s.lowest];
    const uint64_t max = spread_value(hi, s.figure), min = spread_value(lo, s.figure);
    auto end = [&](const JobRow& r, uint64_t bytes) {
      return json{{"process", r.member}, {"label", member_label(job.members[r.member])}, {"device", r.device},
                  {"bytes", bytes}};
    };
    spreads.push_back({{"figure", kSpreadFigures[static_cast<size_t>(s.figure)].key},
                       {"rows", s.rows},
                       {"highest", end(hi, max)},
                       {"lowest", end(lo, min)},
                       {"difference_bytes", max - min},
                       {"difference_percent",
                        min > 0 ? json(100.0 * double(max - min) / double(min)) : json(nullptr)}});
  }
  json failed_first = nullptr;
  if (!job.ooms.empty()) {
    const JobOom& first = job.ooms.front();
    failed_first = {{"process", first.member},
                    {"label", member_label(job.members[first.member])},
                    {"job_ns", job.job_time(first.member, first.failure.at_ns)},
                    {"wall_ns", first.wall_ns},
                    {"later", json::array()}};
    for (size_t i = 1; i < job.ooms.size(); ++i) {
      const JobOom& o = job.ooms[i];
      failed_first["later"].push_back({{"process", o.member},
                                       {"label", member_label(job.members[o.member])},
                                       {"after_ns", o.wall_ns - first.wall_ns}});
    }
  }
  return {{"job", {{"root", job.root},
                   {"processes", job.members.size()},
                   {"opened", job.opened},
                   {"start_realtime_ns", job.start_realtime_ns},
                   {"left_out", job.left_out.empty() ? json(nullptr) : json(job.left_out)}}},
          {"processes", processes},
          {"spread", spreads},
          {"failed_first", failed_first}};
}

}  // namespace gmp::analysis
