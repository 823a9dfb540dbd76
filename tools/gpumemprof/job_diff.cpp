// `gpumemprof diff ROOT_A ROOT_B` on two jobs (docs/report.md §Jobs): each process of B against the
// process of A in its place, rank by rank (unranked processes in job order), device by device: the
// peaks and their change, what only one job has, and each pair's own diff command. The figures
// are the job view's (job_analysis.h): each process's summary, no trace replayed.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bytes_text.h"
#include "count_text.h"
#include "human_text.h"
#include "job_view.h"
#include "json_text.h"
#include "output_streams.h"

namespace gmp::tool {
namespace {

using analysis::JobAnalysis;
using analysis::JobRow;

// Where a process stands in its job, for pairing with the other job's: "rank 3", or "process 2"
// (the second process no launcher ranked, in job order: pids differ from run to run).
std::vector<std::string> places(const JobAnalysis& job) {
  std::vector<std::string> out;
  size_t unranked = 0;
  for (const reader::JobMember& m : job.members) {
    if (m.run && m.run->manifest.rank) {
      out.push_back("rank " + std::to_string(*m.run->manifest.rank));
    } else {
      out.push_back("process " + std::to_string(++unranked));
    }
  }
  return out;
}

struct Side {
  const JobRow* row = nullptr;
  const reader::JobMember* member = nullptr;
};

struct Pair {
  std::string place;
  int device = -1;
  Side a, b;
};

// "3.00 MiB -> 4.00 MiB (+1.00 MiB, +33.3%)"
std::string change_text(uint64_t a, uint64_t b) {
  std::string s = bytes_text(a) + " -> " + bytes_text(b);
  if (a == b) return s + " (no change)";
  s += " (" + signed_bytes(static_cast<int64_t>(b) - static_cast<int64_t>(a));
  if (a != 0) {
    char pct[32];
    std::snprintf(pct, sizeof pct, ", %+.1f%%", 100.0 * (static_cast<double>(b) - static_cast<double>(a)) / static_cast<double>(a));
    s += pct;
  }
  return s + ")";
}

nlohmann::json figure_json(const Side& a, const Side& b, uint64_t JobRow::*field) {
  auto value = [&](const Side& s) { return s.row != nullptr ? nlohmann::json(s.row->*field) : nlohmann::json(); };
  nlohmann::json j = {{"a", value(a)}, {"b", value(b)}};
  j["delta"] = a.row != nullptr && b.row != nullptr
                   ? nlohmann::json(static_cast<int64_t>(b.row->*field) - static_cast<int64_t>(a.row->*field))
                   : nlohmann::json();
  return j;
}

}  // namespace

int diff_jobs(const JobAnalysis& a, const JobAnalysis& b, bool json, nlohmann::json limits) {
  // Rows by (place, device), in A's order, then what only B has.
  const std::vector<std::string> place_a = places(a), place_b = places(b);
  std::vector<Pair> pairs;
  std::map<std::pair<std::string, int>, size_t> index;
  auto add = [&](const JobAnalysis& job, const std::vector<std::string>& place, bool is_a) {
    for (const JobRow& r : job.rows) {
      const auto key = std::make_pair(place[r.member], r.device);
      auto [it, fresh] = index.try_emplace(key, pairs.size());
      if (fresh) pairs.push_back({key.first, r.device, {}, {}});
      (is_a ? pairs[it->second].a : pairs[it->second].b) = {&r, &job.members[r.member]};
    }
  };
  add(a, place_a, true);
  add(b, place_b, false);

  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const Pair& p : pairs) {
      auto path = [](const Side& s) { return s.member != nullptr ? nlohmann::json(s.member->path) : nlohmann::json(); };
      rows.push_back({{"place", p.place},
                      {"device", p.device < 0 ? nlohmann::json() : nlohmann::json(p.device)},
                      {"a", path(p.a)},
                      {"b", path(p.b)},
                      {"allocated_peak", figure_json(p.a, p.b, &JobRow::allocated_peak)},
                      {"reserved_peak", figure_json(p.a, p.b, &JobRow::reserved_peak)}});
    }
    const nlohmann::json out = {{"a", {{"root", a.root}, {"processes", a.members.size()}}},
                                {"b", {{"root", b.root}, {"processes", b.members.size()}}},
                                {"rows", rows},
                                {"limits", std::move(limits)}};
    stdout_carries_data();
    std::printf("%s\n", json_text(out, 2).c_str());
    return 0;
  }
  std::printf("gpumemprof diff: job %s (%s) -> job %s (%s)\n", a.root.c_str(), counted(a.members.size(), "process").c_str(),
              b.root.c_str(), counted(b.members.size(), "process").c_str());
  for (const Pair& p : pairs) {
    const std::string where = p.place + (p.device < 0 ? ", no device memory" : ", device " + std::to_string(p.device));
    if (p.a.row == nullptr || p.b.row == nullptr) {
      std::printf("  %s: only in %s\n", where.c_str(), p.a.row != nullptr ? "A" : "B");
      continue;
    }
    say(where + ": allocated peak " + change_text(p.a.row->allocated_peak, p.b.row->allocated_peak) +
            "; reserved peak " + change_text(p.a.row->reserved_peak, p.b.row->reserved_peak),
        "  ", "      ");
  }
  std::printf("each pair's own diff:\n");  // commands whole, to be pasted
  std::map<std::string, bool> said;
  for (const Pair& p : pairs) {
    if (p.a.member == nullptr || p.b.member == nullptr || said[p.place]) continue;
    said[p.place] = true;
    std::printf("  %-9s gpumemprof diff %s %s\n", p.place.c_str(), p.a.member->path.c_str(), p.b.member->path.c_str());
  }
  return 0;
}

}  // namespace gmp::tool
