#include "report_attribution.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "bytes_text.h"
#include "count_text.h"
#include "human_text.h"

namespace gmp::tool {
namespace {

using ull = unsigned long long;

constexpr size_t kSitesShown = 10;
constexpr size_t kCallersShown = 4;  // frames below the site: enough to tell two callers apart
constexpr size_t kMarksShown = 40;
constexpr size_t kPausesShown = 20;



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
  say("ranges: " + counted(r.ranges.size(), "name") + ", " + counted(calls, "call") + " (allocated bytes of all devices" +
          (r.tensors ? ", and the framework's tensors'" : "") +
          "; allocations by the range's thread, nested ranges included)",
      "", "  ");
  // With the framework bridge, the tensors' figures beside the driver's (what the steps asked for,
  // where the driver's show the caching allocator's segments).
  std::vector<std::string> labels = {"name", "calls", "total", "average", "allocated", "peak above entry", "net change"};
  if (r.tensors) labels.insert(labels.end(), {"tensors allocated", "tensor peak above entry"});
  auto table = two_row_header(labels);
  for (const analysis::RangeRow& row : r.ranges) {
    std::vector<std::string> cells = {row.name, grouped(row.calls), human_duration_ns(row.total_ns),
                                      human_duration_ns(row.calls ? row.total_ns / row.calls : 0),
                                      bytes_text(row.driver.bytes_allocated), bytes_text(row.driver.peak_above_entry),
                                      signed_bytes(row.driver.net_change)};
    if (r.tensors) cells.insert(cells.end(), {bytes_text(row.tensors.bytes_allocated), bytes_text(row.tensors.peak_above_entry)});
    if (row.open_at_end) cells.back() += "  (" + grouped(row.open_at_end) + " still open at the end)";
    table.push_back(std::move(cells));
  }
  print_table(std::move(table), {.indent = 4, .header_rows = 2, .elastic = 0, .right = {1, 2, 3, 4, 5, 6, 7, 8}});
  if (r.unbalanced_pops)
    std::printf("    %s without an open range ignored\n", counted(r.unbalanced_pops, "pop").c_str());
}

void print_marks(const analysis::RunAnalysis& run) {
  const analysis::Regions& r = run.regions;
  if (r.marks_total == 0) return;
  std::printf("marks: %s (allocated bytes of all devices%s)\n", counted(r.marks_total, "checkpoint").c_str(),
              r.tensors ? ", and the framework's tensors'" : "");
  std::vector<std::string> labels = {"#", "name", "at", "allocated", "peak since prev", "peak so far", "growth"};
  if (r.tensors) labels.insert(labels.end(), {"tensors allocated", "tensor growth"});
  auto table = two_row_header(labels);
  auto row = [&](const analysis::MarkRow& m) {
    std::vector<std::string> cells = {grouped(m.index), m.name, human_duration_ns(m.at_ns), bytes_text(m.driver.allocated),
                                      bytes_text(m.driver.peak_since_previous), bytes_text(m.driver.peak_so_far),
                                      signed_bytes(m.driver.growth)};
    if (r.tensors) cells.insert(cells.end(), {bytes_text(m.tensors.allocated), signed_bytes(m.tensors.growth)});
    table.push_back(std::move(cells));
  };
  // Long runs: the first and last checkpoints, and the largest growth wherever it was.
  const size_t n = r.marks.size();
  const size_t head = std::min(n, kMarksShown / 2);
  const size_t tail_from = std::max(head, n > kMarksShown / 2 ? n - kMarksShown / 2 : 0);
  for (size_t i = 0; i < n; ++i) {
    if (i == head && tail_from > head) {  // a line of its own across the table
      table.push_back({"... " + grouped(r.marks_total - head - (n - tail_from)) + " checkpoints not shown (--json has " +
                       std::to_string(tail_from - head) + " of them)"});
    }
    if (i >= head && i < tail_from) continue;
    row(r.marks[i]);
  }
  print_table(std::move(table), {.indent = 4, .header_rows = 2, .elastic = 1, .right = {0, 2, 3, 4, 5, 6, 7, 8}});
  // Named below the table, shown there or not (a long run's middle marks are not).
  if (const auto& g = r.largest_growth) {
    say("largest growth: #" + grouped(g->index) + " " + g->name + ", " + signed_bytes(g->driver.growth) + " at " +
            human_duration_ns(g->at_ns),
        "    ", "      ");
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
