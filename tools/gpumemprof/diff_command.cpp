// `gpumemprof diff DIR_A DIR_B [--json]`: what changed between two runs of (usually) the same
// program: peaks, counts, leaks, OOMs and alerts, and the largest changes in what was live at each
// device's peak, by kind and by call site.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bytes_text.h"
#include "check_limits.h"
#include "command_args.h"
#include "commands.h"
#include "human_text.h"
#include "job_view.h"
#include "json_text.h"
#include "limits_verdict.h"
#include "output_streams.h"
#include "run_analysis.h"

namespace gmp::tool {
namespace {

constexpr size_t kChangesShown = 10;

struct Row {
  std::string name;
  uint64_t a = 0, b = 0;
  bool bytes = true;
  int64_t delta() const { return static_cast<int64_t>(b) - static_cast<int64_t>(a); }
};

std::string signed_figure(const Row& r) {
  const int64_t d = r.delta();
  const uint64_t mag = static_cast<uint64_t>(d < 0 ? -d : d);
  std::string s = d == 0 ? "0" : std::string(d < 0 ? "-" : "+") + (r.bytes ? bytes_text(mag) : std::to_string(mag));
  if (d != 0 && r.a != 0) {
    char pct[32];
    std::snprintf(pct, sizeof pct, " (%+.1f%%)", 100.0 * static_cast<double>(d) / static_cast<double>(r.a));
    s += pct;
  }
  return s;
}

std::string figure(const Row& r, uint64_t v) { return r.bytes ? bytes_text(v) : std::to_string(v); }

nlohmann::json row_json(const Row& r) { return {{"a", r.a}, {"b", r.b}, {"change", r.delta()}}; }

// "allocated peak" -> "allocated_peak", "duration (ms)" -> "duration_ms": JSON keys for the rows.
std::string json_key(const std::string& name) {
  std::string key;
  for (char c : name) {
    if (c == ' ') key += '_';
    else if (c != '(' && c != ')') key += c;
  }
  return key;
}

const analysis::DeviceAnalysis* find_device(const analysis::RunAnalysis& run, int ordinal) {
  auto it = run.devices.find(ordinal);
  return it == run.devices.end() ? nullptr : &it->second;
}

// Rows describing one device in both runs; a device missing from one run counts as zeros there.
// When both runs had the framework bridged on the device, its peaks and final figures too.
std::vector<Row> device_rows(const analysis::DeviceAnalysis* a, const analysis::DeviceAnalysis* b) {
  static const analysis::DeviceAnalysis none;
  const auto& x = a ? *a : none;
  const auto& y = b ? *b : none;
  std::vector<Row> rows = {
      {"allocated peak", x.allocated_peak.bytes, y.allocated_peak.bytes},
      {"reserved peak", x.reserved_peak.bytes, y.reserved_peak.bytes},
      {"allocated final", x.final_stats.allocated.current, y.final_stats.allocated.current},
      {"reserved final", x.final_stats.reserved.current, y.final_stats.reserved.current},
      {"live at peak", x.live_at_peak.total.count, y.live_at_peak.total.count, false},
      {"allocations", x.final_stats.alloc_count, y.final_stats.alloc_count, false},
      {"frees", x.final_stats.free_count, y.final_stats.free_count, false},
      {"failed allocations", x.final_stats.failed_alloc_count, y.final_stats.failed_alloc_count, false},
  };
  const FrameworkStats& fx = x.final_stats.framework;
  const FrameworkStats& fy = y.final_stats.framework;
  if (fx.attached && fy.attached) {
    rows.insert(rows.begin() + 4, {{"framework allocated peak", fx.allocated.peak, fy.allocated.peak},
                                   {"framework reserved peak", fx.reserved.peak, fy.reserved.peak},
                                   {"framework allocated final", fx.allocated.current, fy.allocated.current},
                                   {"framework reserved final", fx.reserved.current, fy.reserved.current}});
  }
  return rows;
}

// Bytes of a live set grouped by a key (kind, call site), largest absolute change first. The set
// comes from each run with that run's analysis, because call sites are named per run.
template <typename SetOf, typename KeyOf>
std::vector<Row> live_changes(const analysis::RunAnalysis& ra, const analysis::RunAnalysis& rb, SetOf set_of,
                              KeyOf key_rows) {
  std::map<std::string, Row> rows;
  if (const analysis::LiveSet* set = set_of(ra))
    key_rows(ra, *set, [&](const std::string& k, uint64_t v) { rows[k].a += v; });
  if (const analysis::LiveSet* set = set_of(rb))
    key_rows(rb, *set, [&](const std::string& k, uint64_t v) { rows[k].b += v; });
  std::vector<Row> out;
  for (auto& [k, r] : rows) {
    r.name = k;
    if (r.delta() != 0 || r.a != 0) out.push_back(r);
  }
  // Largest change first; among equal changes (two runs of one program: all 0) the biggest.
  std::stable_sort(out.begin(), out.end(), [](const Row& l, const Row& r) {
    if (std::llabs(l.delta()) != std::llabs(r.delta())) return std::llabs(l.delta()) > std::llabs(r.delta());
    return std::max(l.a, l.b) > std::max(r.a, r.b);
  });
  return out;
}

template <typename Emit>
void kind_rows(const analysis::RunAnalysis&, const analysis::LiveSet& set, Emit emit) {
  for (int k = 1; k < kKindCount; ++k) {
    if (set.by_kind[k].count) emit(std::string(kind_name(static_cast<Kind>(k))), set.by_kind[k].bytes);
  }
}

// Stack ids are per run: two runs of one program give one call chain different ids, and one id
// different chains. Sites are compared by their symbolised label (call_sites.h), which names the
// same code the same way in both runs.
template <typename Emit>
void site_rows(const analysis::RunAnalysis& run, const analysis::LiveSet& set, Emit emit) {
  for (const auto& [id, b] : set.by_stack) emit(analysis::site_label(id, run.stacks), b.bytes);
}

std::vector<Row> process_rows(const analysis::RunAnalysis& a, const analysis::RunAnalysis& b) {
  return {
      {"leaked bytes at exit", a.leaks.total.bytes, b.leaks.total.bytes},
      {"leaked allocations", a.leaks.total.count, b.leaks.total.count, false},
      {"pinned host peak", a.run.figures.host_pinned_bytes.peak, b.run.figures.host_pinned_bytes.peak},
      {"OOM failures", a.run.figures.oom.failures, b.run.figures.oom.failures, false},
      {"alerts fired", a.run.figures.alerts.fired(), b.run.figures.alerts.fired(), false},
      {"events", a.events, b.events, false},
      {"lost events", a.run.figures.events.lost, b.run.figures.events.lost, false},
      {"duration (ms)", a.duration_ns / 1'000'000, b.duration_ns / 1'000'000, false},
  };
}

void print_rows(const std::vector<Row>& rows, int indent = 2, size_t limit = SIZE_MAX) {
  size_t n = 0;
  for (const Row& r : rows) {
    if (n++ >= limit) {
      std::printf("%*s... and %zu more (--json lists them)\n", indent, "", rows.size() - limit);
      break;
    }
    std::printf("%*s%-*s %-14s %-14s %s\n", indent, "", 24 - indent, r.name.c_str(), figure(r, r.a).c_str(),
                figure(r, r.b).c_str(), signed_figure(r).c_str());
  }
}

// Site labels are long: the figures first, the label last.
void print_site_rows(const std::vector<Row>& rows, size_t limit) {
  if (!rows.empty()) std::printf("    %-14s %-14s %-22s %s\n", "A", "B", "change", "site");
  size_t n = 0;
  for (const Row& r : rows) {
    if (n++ >= limit) {
      std::printf("    ... and %zu more (--json lists them)\n", rows.size() - limit);
      break;
    }
    // A site that does not fit beside its figures goes on the line below them, as in the report.
    constexpr size_t kFigures = 4 + 15 + 15 + 23;
    const bool beside = kFigures + display_width(r.name) <= output_width();
    if (beside) {
      std::printf("    %-14s %-14s %-22s %s\n", figure(r, r.a).c_str(), figure(r, r.b).c_str(), signed_figure(r).c_str(),
                  r.name.c_str());
    } else {
      std::printf("    %-14s %-14s %s\n      %s\n", figure(r, r.a).c_str(), figure(r, r.b).c_str(),
                  signed_figure(r).c_str(), fit_rest(r.name, 6).c_str());
    }
  }
}

nlohmann::json rows_json(const std::vector<Row>& rows) {
  nlohmann::json j = nlohmann::json::object();
  for (const Row& r : rows) j[json_key(r.name)] = row_json(r);
  return j;
}

nlohmann::json changes_json(const std::vector<Row>& rows, const char* key) {
  nlohmann::json j = nlohmann::json::array();
  for (const Row& r : rows) j.push_back({{key, r.name}, {"a", r.a}, {"b", r.b}, {"change", r.delta()}});
  return j;
}

void diff(const analysis::RunAnalysis& a, const analysis::RunAnalysis& b, bool json, nlohmann::json limits) {
  std::set<int> ordinals;
  for (const auto& [o, _] : a.devices) ordinals.insert(o);
  for (const auto& [o, _] : b.devices) ordinals.insert(o);
  nlohmann::json out = {{"a", a.run.path}, {"b", b.run.path}, {"devices", nlohmann::json::array()}};
  if (!json) std::printf("gpumemprof diff\n  A: %s\n  B: %s\n", a.run.path.c_str(), b.run.path.c_str());
  for (int o : ordinals) {
    const auto* da = find_device(a, o);
    const auto* db = find_device(b, o);
    const auto rows = device_rows(da, db);
    auto peak_set = [o](const analysis::RunAnalysis& r) -> const analysis::LiveSet* {
      const auto* d = find_device(r, o);
      return d ? &d->live_at_peak : nullptr;
    };
    const auto kinds =
        live_changes(a, b, peak_set, [](const auto& r, const auto& set, auto emit) { kind_rows(r, set, emit); });
    const auto sites =
        live_changes(a, b, peak_set, [](const auto& r, const auto& set, auto emit) { site_rows(r, set, emit); });
    if (json) {
      out["devices"].push_back({{"device", o},
                                {"figures", rows_json(rows)},
                                {"live_at_peak_by_kind", changes_json(kinds, "kind")},
                                {"live_at_peak_by_site", changes_json(sites, "site")}});
      continue;
    }
    std::printf("\ndevice %d  %s\n  %-22s %-14s %-14s %s\n", o, (db ? db->name : da->name).c_str(), "", "A", "B",
                "change");
    print_rows(rows);
    std::printf("  live at the allocated peak, by kind:\n");
    print_rows(kinds, 4, kChangesShown);
    std::printf("  live at the allocated peak, largest changes by call site:\n");
    print_site_rows(sites, kChangesShown);
  }
  const auto process = process_rows(a, b);
  auto leak_set = [](const analysis::RunAnalysis& r) { return &r.leaks; };
  const auto leak_sites =
      live_changes(a, b, leak_set, [](const auto& r, const auto& set, auto emit) { site_rows(r, set, emit); });
  const bool stacks = a.stack_events > 0 || b.stack_events > 0;
  if (json) {
    out["process"] = rows_json(process);
    out["leaks_by_site"] = changes_json(leak_sites, "site");
    if (!limits.is_null()) out["limits"] = std::move(limits);
    stdout_carries_data();
    std::printf("%s\n", json_text(out, 2).c_str());
  } else {
    std::printf("\nprocess\n");
    print_rows(process);
    if (stacks && !leak_sites.empty()) {
      std::printf("  leaks at exit, largest changes by call site:\n");
      print_site_rows(leak_sites, kChangesShown);
    }
  }
}

// The program a run profiled, as the warning below names it: the executable, and for a Python
// interpreter the script or module it ran (its first argument that is no option).
std::string program_text(const ManifestRecord& m) {
  if (!m.exe.substr(m.exe.rfind('/') + 1).starts_with("python") || !m.argv) return m.exe;
  for (size_t i = 1; i < m.argv->size(); ++i) {
    if (!(*m.argv)[i].starts_with("-")) return m.exe + " " + (*m.argv)[i];
  }
  return m.exe;
}

// --json's "limits": null without a limit.
nlohmann::json verdict_json(const std::optional<analysis::LimitsVerdict>& verdict) {
  if (!verdict) return nullptr;
  nlohmann::json j = {{"broken", verdict->broken}, {"notes", verdict->notes}};
  j["passed"] = verdict->broken.empty() ? nlohmann::json(verdict->passed) : nlohmann::json();
  return j;
}

// The growth limit's verdict, printed after the table as for two runs; the exit status.
int print_verdict(const std::optional<analysis::LimitsVerdict>& verdict, bool json) {
  if (!verdict) return 0;
  if (!json) {
    std::printf("\n");
    for (const std::string& line : verdict->notes) std::printf("gpumemprof diff: %s\n", line.c_str());
    for (const std::string& line : verdict->broken) std::printf("gpumemprof diff: %s\n", line.c_str());
    if (verdict->broken.empty()) std::printf("gpumemprof diff: %s\n", verdict->passed.c_str());
  }
  return verdict->broken.empty() ? 0 : 1;
}

// Two jobs (job_diff.cpp); a job and one run are not compared. `job_a`, `job_b`: is_job_root() of each.
int diff_job_roots(const std::vector<std::string>& dirs, bool job_a, bool job_b, bool json, analysis::Limits limits) {
  if (job_a != job_b) {
    std::fprintf(stderr, "gpumemprof diff: %s is a job and %s one run directory; give two jobs or two run directories\n",
                 dirs[job_a ? 0 : 1].c_str(), dirs[job_a ? 1 : 0].c_str());
    return 2;
  }
  auto a = open_job("diff", dirs[0]);
  if (!a) return 2;
  auto b = open_job("diff", dirs[1]);
  if (!b) return 2;
  std::optional<analysis::LimitsVerdict> verdict;
  if (limits.any()) {  // check's --max-growth with A as the baseline, each of B's processes against its rank
    auto opened = [](const analysis::JobAnalysis& job) {
      std::vector<reader::JobMember> out;
      for (const reader::JobMember& m : job.members) {
        if (m.run) out.push_back(m);
      }
      return out;
    };
    std::string error;
    limits.baseline_path = dirs[0];
    limits.baseline = opened(*a);
    verdict = analysis::evaluate_limits(opened(*b), limits, dirs[1], error);
    if (!verdict) {
      std::fprintf(stderr, "gpumemprof diff: %s\n", error.c_str());
      return 2;
    }
  }
  diff_jobs(*a, *b, json, verdict_json(verdict));
  return print_verdict(verdict, json);
}

}  // namespace

int diff_main(int argc, char** argv) {
  PathArgs args;
  analysis::Limits limits;
  limits.growth_option = "--fail-if-peak-grows";
  // The table's one option besides --json: the growth limit, with A as the baseline.
  auto growth = [&](const Option&, int n, char** v, int& i) -> std::optional<int> {
    if (take_growth_arg("diff", n, v, i, limits)) return std::nullopt;
    return 2;
  };
  if (auto status = parse_path_args(kDiffOptions, argc, argv, args, growth)) return *status;
  const std::vector<std::string>& dirs = args.paths;
  const bool json = args.json;
  if (dirs.size() != 2) {
    std::fprintf(
        stderr, "gpumemprof diff: two run directories expected, got %zu; usage: gpumemprof diff DIR_A DIR_B [--json]\n",
        dirs.size());
    return 2;
  }
  // Each is_job_root() searches its directory: asked once.
  if (const bool job_a = is_job_root(dirs[0]), job_b = is_job_root(dirs[1]); job_a || job_b) {
    return diff_job_roots(dirs, job_a, job_b, json, limits);
  }
  std::string error;
  auto a = analysis::analyze_run(dirs[0], analysis::Options{}, error);
  if (!a) {
    std::fprintf(stderr, "gpumemprof diff: A: %s\n", error.c_str());
    return 2;
  }
  auto b = analysis::analyze_run(dirs[1], analysis::Options{}, error);
  if (!b) {
    std::fprintf(stderr, "gpumemprof diff: B: %s\n", error.c_str());
    return 2;
  }
  // Runs of two different programs are seldom what a diff means to compare.
  if (program_text(a->run.manifest) != program_text(b->run.manifest)) {
    std::fprintf(stderr, "gpumemprof diff: warning: A and B are runs of different programs (A: %s; B: %s)\n",
                 program_text(a->run.manifest).c_str(), program_text(b->run.manifest).c_str());
  }
  // The limit is check's --max-growth with A as the baseline (limits_verdict.h), on B's figures.
  std::optional<analysis::LimitsVerdict> verdict;
  if (limits.any()) {
    auto member = [](const std::string& path, const analysis::RunAnalysis& r) {
      return reader::JobMember{path, r.run, ""};
    };
    limits.baseline_path = dirs[0];
    limits.baseline = {member(dirs[0], *a)};
    verdict = analysis::evaluate_limits({member(dirs[1], *b)}, limits, dirs[1], error);
    if (!verdict) {
      std::fprintf(stderr, "gpumemprof diff: %s\n", error.c_str());
      return 2;
    }
  }
  diff(*a, *b, json, verdict_json(verdict));
  return print_verdict(verdict, json);
}

}  // namespace gmp::tool
