#include "limits_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "bytes_text.h"
#include "category_peaks.h"
#include "count_text.h"
#include "event.h"

namespace gmp::analysis {
namespace {

// "rank 1", or "pid 4242" for a process no launcher gave a rank, or the path when neither is known.
std::string process_label(const reader::JobMember& m) {
  const ManifestRecord& man = m.run->manifest;
  if (man.rank) return "rank " + std::to_string(*man.rank);
  if (man.pid) return "pid " + std::to_string(*man.pid);
  return m.path;
}

// "96.00 MiB" and "64.00 MiB", or exact byte counts where the rounded figures read alike.
std::pair<std::string, std::string> two_sizes(uint64_t figure, uint64_t limit) {
  std::string f = bytes_text(figure), l = bytes_text(limit);
  if (f == l && figure != limit) return {std::to_string(figure) + " B", std::to_string(limit) + " B"};
  return {f, l};
}

std::string over(uint64_t figure, const char* option, uint64_t limit) {
  const auto [f, l] = two_sizes(figure, limit);
  return f + ", over " + option + " " + l;
}

std::string percent_text(double percent) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", percent);
  return buf;
}

std::string growth_text(double growth) {
  if (std::isinf(growth)) return "growth from nothing";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.2f%%", growth);
  return buf;
}

// The growth of `peak` over the baseline's `before`, in percent. Growth from nothing is unbounded:
// any peak on a device the baseline never used breaks any --max-growth.
double growth_percent(uint64_t peak, uint64_t before) {
  if (before == 0) return peak > 0 ? HUGE_VAL : 0.0;
  return 100.0 * (static_cast<double>(peak) - static_cast<double>(before)) / static_cast<double>(before);
}

const DeviceFigures* find_device(const reader::RunDirectory& run, int ordinal) {
  for (const DeviceFigures& d : run.figures.devices) {
    if (d.stats.device == ordinal) return &d;
  }
  return nullptr;
}

// The baseline's process for `m`, the `index`-th process checked: the one of the same rank when
// both record ranks, else the one in the same position (runs from before ranks were recorded).
const reader::RunDirectory* baseline_for(const Limits& limits, const reader::JobMember& m, size_t index) {
  const bool ranked = std::any_of(limits.baseline.begin(), limits.baseline.end(),
                                  [](const reader::JobMember& b) { return b.run->manifest.rank.has_value(); });
  if (const auto rank = m.run->manifest.rank; rank && ranked) {
    for (const reader::JobMember& b : limits.baseline) {
      if (b.run->manifest.rank == rank) return &*b.run;
    }
    return nullptr;
  }
  return index < limits.baseline.size() ? &*limits.baseline[index].run : nullptr;
}

// The highest figure seen for one limit, and where: what a passing line reports.
template <typename T>
struct Highest {
  std::optional<T> value;
  std::string where;
  void offer(T v, const std::string& w) {
    if (!value || v > *value) {
      value = v;
      where = w;
    }
  }
};

struct Highests {
  Highest<uint64_t> peak, reserved, leak, graph;
  std::map<TensorCategory, Highest<uint64_t>> category;
  Highest<double> growth;
  std::string growth_figures;  // "50.00 MiB against 48.00 MiB" for growth.where
};

}  // namespace

uint64_t graph_memory_peak(const DeviceStats& d) {
  uint64_t n = d.graph_reserved.peak;
  for (const auto& [_, p] : d.framework.private_pools) n += p.reserved.peak;
  return n;
}

namespace {

// The broken limits of one device.
void check_device(const Limits& limits, const std::string& who, const DeviceFigures& d,
                  const reader::RunDirectory* baseline, std::vector<std::string>& broken, Highests& highest) {
  const std::string where = who + ", device " + std::to_string(d.stats.device);
  const uint64_t peak = d.stats.allocated.peak, reserved = d.stats.reserved.peak;
  highest.peak.offer(peak, where);
  highest.reserved.offer(reserved, where);
  if (limits.max_peak && peak > *limits.max_peak) {
    broken.push_back(where + ": peak allocated " + over(peak, "--max-peak", *limits.max_peak));
  }
  if (limits.max_reserved && reserved > *limits.max_reserved) {
    broken.push_back(where + ": peak reserved " + over(reserved, "--max-reserved", *limits.max_reserved));
  }
  const uint64_t graph = graph_memory_peak(d.stats);
  highest.graph.offer(graph, where);
  if (limits.max_graph_memory && graph > *limits.max_graph_memory) {
    broken.push_back(where + ": CUDA graph memory " + over(graph, "--max-graph-memory", *limits.max_graph_memory));
  }
  if (!limits.max_growth) return;
  const DeviceFigures* base = baseline != nullptr ? find_device(*baseline, d.stats.device) : nullptr;
  const uint64_t before = base != nullptr ? base->stats.allocated.peak : 0;
  const double growth = growth_percent(peak, before);
  const auto [now_text, before_text] = two_sizes(peak, before);
  const std::string figures = now_text + " against the baseline's " + before_text;
  if (!highest.growth.value || growth > *highest.growth.value) highest.growth_figures = figures;
  highest.growth.offer(growth, where);
  if (growth <= *limits.max_growth) return;
  broken.push_back(where + ": peak allocated " + figures + " (" + growth_text(growth) + "), over " +
                   limits.growth_option + " " + percent_text(*limits.max_growth));
}

// The out-of-memory failures of a process, counted by the driver (summary.json's oom.failures) and
// by the framework (its own OOMs, devices[].framework.ooms), with the devices they were on.
std::optional<std::string> oom_text(const Summary& s) {
  uint64_t framework = 0;
  std::set<int> devices;
  for (const SummaryFailure& f : s.failed_allocations) {
    if (f.error == kOutOfMemory && f.device >= 0) devices.insert(f.device);
  }
  for (const DeviceFigures& d : s.devices) {
    framework += d.stats.framework.ooms;
    if (d.stats.framework.ooms > 0 && d.stats.device >= 0) devices.insert(d.stats.device);
  }
  if (s.oom.failures == 0 && framework == 0) return std::nullopt;
  std::string text;
  if (s.oom.failures > 0) text = counted(s.oom.failures, "out-of-memory failure");
  if (framework > 0) {
    text += (text.empty() ? "" : " and ") + counted(framework, "out-of-memory error") + " raised by the framework";
  }
  if (!devices.empty()) {
    text += devices.size() == 1 ? " (device " : " (devices ";
    for (int d : devices) text += std::to_string(d) + (d == *devices.rbegin() ? ")" : ", ");
  }
  return text;
}

// What held, with the highest figure of each limit and where it was.
std::string passed_text(const Limits& limits, const Highests& h, size_t processes, size_t devices,
                        const std::string& where) {
  std::vector<std::string> parts;
  auto bytes_part = [&](const char* what, const Highest<uint64_t>& figure, const char* option, uint64_t limit) {
    const auto [f, l] = two_sizes(figure.value.value_or(0), limit);
    parts.push_back(std::string(what) + " " + (figure.value ? f + " (" + figure.where + ")" : "none (no device)") +
                    ", " + option + " " + l);
  };
  if (limits.max_peak) bytes_part("highest peak allocated", h.peak, "--max-peak", *limits.max_peak);
  if (limits.max_reserved) bytes_part("highest peak reserved", h.reserved, "--max-reserved", *limits.max_reserved);
  if (limits.max_growth) {
    parts.push_back("highest growth " +
                    (h.growth.value
                         ? growth_text(*h.growth.value) + " (" + h.growth.where + ": " + h.growth_figures + ")"
                         : std::string("none (no device)")) +
                    ", " + limits.growth_option + " " + percent_text(*limits.max_growth));
  }
  if (limits.max_leak) bytes_part("highest live at exit", h.leak, "--max-leak", *limits.max_leak);
  if (limits.max_graph_memory) {
    bytes_part("highest CUDA graph memory", h.graph, "--max-graph-memory", *limits.max_graph_memory);
  }
  for (const auto& [category, limit] : limits.max_category) {
    const std::string name(tensor_category_name(category));
    auto it = h.category.find(category);
    bytes_part(("highest " + name).c_str(), it != h.category.end() ? it->second : Highest<uint64_t>{},
               ("--max-category " + name).c_str(), limit);
  }
  if (limits.no_oom) parts.push_back("no out-of-memory failure");
  std::string text =
      "passed on " + where + " (" + counted(processes, "process") + ", " + counted(devices, "per-process device") + ")";
  for (size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? ": " : "; ") + parts[i];
  return text;
}

// --max-category on one process: its trace replayed. False with `error` when it cannot be read.
bool check_categories(const Limits& limits, const reader::JobMember& m, const std::string& who,
                      std::vector<std::string>& broken, Highests& highest, std::string& error) {
  const auto peaks = category_peaks(m.path, error);
  if (!peaks) return false;
  if (!peaks->decided) {
    broken.push_back(who + ": --max-category cannot be checked: no tensor's category was decided (" +
                     peaks->why_undecided + ")");
    return true;
  }
  for (const auto& [ordinal, bytes] : peaks->peaks) {
    const std::string where = who + ", device " + std::to_string(ordinal);
    for (const auto& [category, limit] : limits.max_category) {
      const uint64_t peak = bytes[static_cast<size_t>(category)];
      highest.category[category].offer(peak, where);
      if (peak > limit) {
        const std::string option = "--max-category " + std::string(tensor_category_name(category));
        broken.push_back(where + ": " + std::string(tensor_category_name(category)) + " peaked at " +
                         over(peak, option.c_str(), limit));
      }
    }
  }
  return true;
}

}  // namespace

std::optional<LimitsVerdict> evaluate_limits(const std::vector<reader::JobMember>& runs, const Limits& limits,
                                             const std::string& where, std::string& error) {
  // Every process has its counterpart before anything is said.
  std::vector<const reader::RunDirectory*> baselines(runs.size(), nullptr);
  for (size_t i = 0; limits.max_growth && i < runs.size(); ++i) {
    baselines[i] = baseline_for(limits, runs[i], i);
    if (baselines[i] == nullptr) {
      error = "baseline: " + limits.baseline_path + " has no process for " + process_label(runs[i]) +
              " (matched by rank when both record ranks, else by position; it holds " +
              counted(limits.baseline.size(), "process") + ")";
      return std::nullopt;
    }
  }
  LimitsVerdict verdict;
  Highests highest;
  size_t devices = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const reader::RunDirectory& run = *runs[i].run;
    const std::string who = process_label(runs[i]);
    if (run.summary_rebuilt) {
      verdict.notes.push_back("note: " + who + ": " + run.rebuild_reason + "; its figures were rebuilt from the trace" +
                              (run.events.final_flush ? "" : ", which lacks the events recorded after its last write"));
    }
    for (const DeviceFigures& d : run.figures.devices) {
      if (d.stats.device < 0) continue;
      ++devices;
      check_device(limits, who, d, baselines[i], verdict.broken, highest);
    }
    const Summary& s = run.figures;
    highest.leak.offer(s.live_at_exit_bytes, who);
    if (limits.max_leak && s.live_at_exit_bytes > *limits.max_leak) {
      verdict.broken.push_back(who + ": live at exit " + over(s.live_at_exit_bytes, "--max-leak", *limits.max_leak) +
                               " (" + counted(s.live_at_exit_count, "allocation") + ", all devices together)");
    }
    if (const auto ooms = oom_text(s); limits.no_oom && ooms) {
      verdict.broken.push_back(who + ": " + *ooms + ", and --no-oom allows none");
    }
    if (!limits.max_category.empty() && !check_categories(limits, runs[i], who, verdict.broken, highest, error)) {
      return std::nullopt;
    }
  }
  if (verdict.broken.empty()) verdict.passed = passed_text(limits, highest, runs.size(), devices, where);
  return verdict;
}

}  // namespace gmp::analysis
