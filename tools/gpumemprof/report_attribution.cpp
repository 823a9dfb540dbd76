#include "report_attribution.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "bytes_text.h"
#include "format.h"

namespace gmp::tool {
namespace {

using ull = unsigned long long;

constexpr size_t kSitesShown = 10;
constexpr size_t kCallersShown = 4;  // frames below the site: enough to tell two callers apart
constexpr size_t kMarksShown = 40;
constexpr size_t kPausesShown = 20;
constexpr size_t kNameWidthMax = 40;

std::string signed_bytes(int64_t v) {
  if (v == 0) return "0 B";
  const uint64_t mag = v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  return (v < 0 ? "-" : "+") + bytes_text(mag);
}

// The width of a table's name column: its longest name, at most kNameWidthMax and what the output's
// width leaves beside the `other` columns, at least kNameWidthMin.
constexpr size_t kNameWidthMin = 20;  // narrower names say too little: the table overflows instead
template <typename Rows>
size_t name_width(const Rows& rows, size_t other) {
  size_t widest = 4;  // "name"
  for (const auto& row : rows) widest = std::max(widest, display_width(row.name));
  const size_t width = output_width();
  const size_t room = width > other + kNameWidthMin ? width - other : kNameWidthMin;
  return std::min({widest, kNameWidthMax, room});
}

// A name in a column of `width`: elided in the middle when wider, padded by display width.
std::string column(const std::string& name, size_t width) { return pad(elide_middle(name, width), width); }

}  // namespace

void print_call_sites(const analysis::RunAnalysis& run, const std::vector<analysis::CallSite>& sites, int indent) {
  if (run.stack_events == 0 || sites.empty()) return;
  std::printf("%*sby call site:\n", indent, "");
  size_t shown = 0;
  for (const analysis::CallSite& s : sites) {
    if (shown++ == kSitesShown) {
      std::printf("%*s  ... and more (--json lists %zu)\n", indent, "", sites.size());
      break;
    }
    const std::string lead = std::string(indent + 2, ' ') + pad(bytes_text(s.bytes.bytes), 11) + " in " +
                             pad(grouped(s.bytes.count), 6) + " ";
    std::printf("%s%s\n", lead.c_str(), fit_rest(s.label, display_width(lead)).c_str());
    auto it = run.stacks.find(s.stack_id);
    if (it == run.stacks.end()) continue;
    const analysis::CallStack& frames = it->second;
    const size_t indent_frames = indent + 24;
    // What the site called to get its memory (the allocator or CUDA entry point), then its callers.
    const std::string via = std::string(indent_frames, ' ') + "via ", from = std::string(indent_frames, ' ') + "from ";
    if (s.site_frame > 0) std::printf("%s%s\n", via.c_str(), fit_rest(frames[0].label(), via.size()).c_str());
    const size_t last = std::min(frames.size(), s.site_frame + 1 + kCallersShown);
    for (size_t i = s.site_frame + 1; i < last; ++i) {
      std::printf("%s%s\n", from.c_str(), fit_rest(frames[i].label(), from.size()).c_str());
    }
    const std::string more(indent_frames, ' ');
    if (frames.size() > last) {
      std::printf("%s... %s\n", more.c_str(), counted(frames.size() - last, "more frame").c_str());
    }
    if (s.stacks > 1) {
      std::printf("%s(%s distinct stacks; the largest is shown)\n", more.c_str(), grouped(s.stacks).c_str());
    }
  }
}

void print_ranges(const analysis::RunAnalysis& run) {
  const analysis::Regions& r = run.regions;
  if (r.ranges.empty() && r.unbalanced_pops == 0) return;
  uint64_t calls = 0;
  for (const analysis::RangeRow& row : r.ranges) calls += row.calls;
  say("ranges: " + counted(r.ranges.size(), "name") + ", " + counted(calls, "call") +
          " (allocated bytes of all devices; allocations by the range's thread, nested ranges included)",
      "", "  ");
  const size_t w = name_width(r.ranges, 4 + 1 + 7 + 1 + 10 + 1 + 10 + 1 + 11 + 1 + 17 + 1 + 11);
  std::printf("    %s %7s %-10s %-10s %-11s %-17s %s\n", column("name", w).c_str(), "calls", "total", "average",
              "allocated", "peak above entry", "net change");
  for (const analysis::RangeRow& row : r.ranges) {
    std::printf("    %s %7s %s %s %-11s %-17s %s", column(row.name, w).c_str(), grouped(row.calls).c_str(),
                pad(human_duration_ns(row.total_ns), 10).c_str(),
                pad(human_duration_ns(row.calls ? row.total_ns / row.calls : 0), 10).c_str(),
                bytes_text(row.bytes_allocated).c_str(), bytes_text(row.peak_above_entry).c_str(),
                signed_bytes(row.net_change).c_str());
    if (row.open_at_end) std::printf("  (%s still open at the end)", grouped(row.open_at_end).c_str());
    std::printf("\n");
  }
  if (r.unbalanced_pops)
    std::printf("    %s without an open range ignored\n", counted(r.unbalanced_pops, "pop").c_str());
}

void print_marks(const analysis::RunAnalysis& run) {
  const analysis::Regions& r = run.regions;
  if (r.marks_total == 0) return;
  std::printf("marks: %s (allocated bytes of all devices)\n", counted(r.marks_total, "checkpoint").c_str());
  const size_t w = name_width(r.marks, 4 + 5 + 1 + 1 + 10 + 1 + 11 + 1 + 15 + 1 + 12 + 1 + 11);
  std::printf("    %5s %s %-10s %-11s %-15s %-12s %s\n", "#", column("name", w).c_str(), "at", "allocated",
              "peak since prev", "peak so far", "growth");
  auto row = [&](const analysis::MarkRow& m) {
    const bool largest = r.largest_growth && r.largest_growth->index == m.index;
    std::printf("    %5llu %s %s %-11s %-15s %-12s %s%s\n", (ull)m.index, column(m.name, w).c_str(),
                pad(human_duration_ns(m.at_ns), 10).c_str(), bytes_text(m.allocated).c_str(),
                bytes_text(m.peak_since_previous).c_str(), bytes_text(m.peak_so_far).c_str(),
                signed_bytes(m.growth).c_str(), largest ? "  <- largest growth" : "");
  };
  // Long runs: the first and last checkpoints, and the largest growth wherever it was.
  const size_t n = r.marks.size();
  const size_t head = std::min(n, kMarksShown / 2);
  const size_t tail_from = std::max(head, n > kMarksShown / 2 ? n - kMarksShown / 2 : 0);
  bool largest_shown = false;
  for (size_t i = 0; i < n; ++i) {
    if (i == head && tail_from > head) {
      std::printf("    %5s ... %s checkpoints not shown (--json has %zu of them)\n", "",
                  grouped(r.marks_total - head - (n - tail_from)).c_str(), tail_from - head);
    }
    if (i >= head && i < tail_from) continue;
    row(r.marks[i]);
    largest_shown = largest_shown || (r.largest_growth && r.largest_growth->index == r.marks[i].index);
  }
  if (r.largest_growth && !largest_shown) {
    std::printf("    largest growth:\n");
    row(*r.largest_growth);
  }
}

void print_pauses(const analysis::RunAnalysis& run) {
  const analysis::Regions& r = run.regions;
  if (r.pauses.empty() && r.pauses_dropped == 0) return;
  say("pauses: " + counted(r.pauses.size() + r.pauses_dropped, "pause") +
          "; allocations in them were not recorded (their frees count as unknown frees)",
      "", "  ");
  size_t shown = 0;
  for (const analysis::PauseRow& p : r.pauses) {
    if (shown++ == kPausesShown) {
      std::printf("    ... and %zu more (--json lists them)\n", r.pauses.size() - kPausesShown);
      break;
    }
    const uint64_t d = p.resumed_at_ns > p.at_ns ? p.resumed_at_ns - p.at_ns : 0;
    std::printf("    at %s %s %s (%s), %s recorded\n", pad(human_duration_ns(p.at_ns), 10).c_str(),
                p.resumed ? "resumed at" : "never resumed; trace ends at", pad(human_duration_ns(p.resumed_at_ns), 10).c_str(),
                human_duration_ns(d).c_str(), counted(p.frees, "free").c_str());
  }
}

}  // namespace gmp::tool
