#include "top_detail.h"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>

#include "bytes_text.h"
#include "call_sites.h"
#include "event.h"
#include "human_text.h"
#include "run_directory_files.h"
#include "symbolizer.h"
#include "terminal_text.h"
#include "top_table.h"

namespace gmp::tool::top {
namespace {

using live::LiveDevice;
using live::LiveFile;

constexpr size_t kNoticesShown = 10;

std::string clock_text(uint64_t realtime_ns) {
  const time_t t = static_cast<time_t>(realtime_ns / 1'000'000'000);
  tm local{};
  localtime_r(&t, &local);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &local);
  return buf;
}

std::string device_name(int16_t device) { return device < 0 ? "-" : std::to_string(device); }

std::string notice_text(const live::LiveNotice& n, const std::string& site) {
  const std::string after = "allocated " + bytes_text(n.allocated) + ", reserved " + bytes_text(n.reserved);
  const std::string on = " on device " + device_name(n.device);
  switch (n.type) {
    case live::LiveNotice::kOom:
      return "OOM" + on + ": " + bytes_text(n.size) + " asked; " + after + "; " + site;
    case live::LiveNotice::kAlertFired:
      return alert_type_name(static_cast<AlertType>(n.alert_type)) + " alert" + on + " (threshold " +
             bytes_text(n.size) + "); " + after;
    case live::LiveNotice::kAlertCleared:
      return alert_type_name(static_cast<AlertType>(n.alert_type)) + " alert cleared" + on + "; " + after;
    case live::LiveNotice::kCleanup:
      return "cleanup" + on + " released " + bytes_text(n.size) + "; " + after;
    case live::LiveNotice::kFrameworkOom:
      return "PyTorch OutOfMemoryError" + on + ": " + bytes_text(n.size) + " asked; " + after + "; " + site;
    default:
      return "notice of type " + std::to_string(n.type) + on;
  }
}

std::string peak_pair(const char* name, uint64_t now, uint64_t peak) {
  return std::string(name) + " " + bytes_text(now) + " (peak " + bytes_text(peak) + ")";
}

}  // namespace

std::map<uint32_t, std::string> SiteLabels::labels(const std::string& run_dir, const std::vector<uint32_t>& ids) {
  Run& run = runs_[run_dir];
  std::map<uint32_t, std::string> out;
  std::vector<uint32_t> missing;
  for (uint32_t id : ids) {
    if (id == 0) out[id] = "(no stack captured)";
    else if (auto it = run.labels.find(id); it != run.labels.end()) out[id] = it->second;
    else missing.push_back(id);
  }
  if (missing.empty()) return out;
  const std::string path = run_dir + "/" + kAttributionFile;
  struct stat st {};
  const int64_t size = stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  // The collector appends stacks as it meets them: read again only when there is more to read.
  if (size != run.size || !run.attribution) {
    run.attribution = std::make_unique<reader::Attribution>(reader::read_attribution(path));
    run.size = size;
  }
  const reader::Attribution& a = *run.attribution;
  if (!a.error.empty()) {
    for (uint32_t id : missing) out[id] = "(attribution.jsonl unreadable)";
    return out;
  }
  analysis::Symbolizer symbolizer(a);
  const analysis::StackTable stacks = symbolizer.symbolize(missing);
  for (uint32_t id : missing) {
    out[id] = printable(analysis::site_label(id, stacks));
    // Kept only once its stack is known: one not written yet may be by the next read.
    if (a.stack(id) != nullptr) run.labels[id] = out[id];
  }
  return out;
}

std::string sparkline(const std::vector<std::optional<uint64_t>>& values, uint64_t max, bool utf8) {
  static const char* const kBlocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                        "\u2585", "\u2586", "\u2587", "\u2588"};
  static const char kAscii[] = "_.-=+*#@";
  std::string out;
  for (const std::optional<uint64_t>& v : values) {
    if (!v) {
      out += ' ';
      continue;
    }
    // Eight levels: 0 the lowest, `max` the highest, the rest in proportion.
    const size_t level =
        max == 0 ? 0 : std::min<size_t>(7, static_cast<size_t>(static_cast<long double>(*v) * 8 / max));
    if (utf8) out += kBlocks[level];
    else out += kAscii[level];
  }
  return out;
}

std::vector<std::string> detail_lines(const reader::LiveProcess& p, uint64_t now_ns, size_t width, bool utf8,
                                      SiteLabels& sites) {
  const LiveFile& f = *p.file;
  std::vector<std::string> lines;
  std::string head = "PID " + std::to_string(f.pid) + "  " + printable(live::text_of(f.program));
  if (f.rank >= 0) {
    head += "  rank " + std::to_string(f.rank);
    if (f.world_size > 0) head += " of " + std::to_string(f.world_size);
  }
  head += "  host " + printable(live::text_of(f.host)) + "  " + reader::liveness_name(p.liveness);
  if (p.torn) head += " (its last publish was cut short)";
  head += "  age " + age_text(now_ns > f.start_realtime_ns ? now_ns - f.start_realtime_ns : 0);
  lines.push_back(head);
  lines.push_back("run directory " + printable(p.run_dir));
  // The sparklines take what the line leaves after their label, one cell per second.
  constexpr size_t kLabel = 14;  // "  allocated   "
  const size_t cells = std::min<size_t>(width > kLabel + 1 ? width - kLabel - 1 : 1, live::kHistorySeconds);
  const uint32_t used = std::min<uint32_t>(f.devices_used, live::kDevices);
  for (uint32_t slot = 0; slot < used; ++slot) {
    const LiveDevice& d = f.devices[slot];
    if (d.ordinal < 0) continue;
    lines.push_back("device " + std::to_string(d.ordinal) + "  (" + bytes_text(d.total_bytes) + " total)");
    lines.push_back("  driver:  " + peak_pair("allocated", d.allocated, d.allocated_peak) + "  " +
                    peak_pair("reserved", d.reserved, d.reserved_peak) + "  " + std::to_string(d.live_allocations) +
                    " live allocations");
    if (d.flags & LiveDevice::kFramework) {
      lines.push_back("  tensors: " + peak_pair("allocated", d.tensors, d.tensors_peak) + "  " +
                      peak_pair("reserved", d.framework_reserved, d.framework_reserved_peak) + "  cached " +
                      bytes_text(d.cached) + "  outside " + bytes_text(d.outside) + "  pending free " +
                      bytes_text(d.pending_free));
    }
    if (d.flags & LiveDevice::kGraphs) {
      lines.push_back("  graphs:  reserved " + bytes_text(d.graph_reserved) + "  used " + bytes_text(d.graph_used));
    }
    if (d.flags & LiveDevice::kNvml) {
      lines.push_back("  NVML:    device " + bytes_text(d.nvml_device_used) + " used of " +
                      bytes_text(d.nvml_device_total) + "  this process " +
                      peak_pair("", d.nvml_process_used, d.nvml_process_used_peak).substr(1));
    }
    lines.push_back("  " + std::to_string(d.alloc_count) + " allocations, " + std::to_string(d.free_count) +
                    " frees, " + std::to_string(d.failed_allocs) + " failed, " + std::to_string(d.ooms) +
                    " OOMs, " + std::to_string(d.alerts_fired) + " alerts");
    // History: the second `history_latest` on the right, older ones leftwards.
    std::vector<std::optional<uint64_t>> allocated(cells), reserved(cells);
    uint64_t max = 0;
    for (size_t i = 0; i < cells && f.history_latest != 0; ++i) {
      const uint64_t second = f.history_latest - (cells - 1 - i);
      if (second > f.history_latest || second == 0) continue;  // before the epoch's start: none
      const live::LiveSecond& s = f.history[second % live::kHistorySeconds];
      if (s.second != second) continue;
      allocated[i] = s.allocated_max[slot];
      reserved[i] = s.reserved_max[slot];
      max = std::max({max, s.allocated_max[slot], s.reserved_max[slot]});
    }
    lines.push_back("  allocated   " + sparkline(allocated, max, utf8));
    lines.push_back("  reserved    " + sparkline(reserved, max, utf8));
    lines.push_back("              the last " + std::to_string(cells) + " s, top of the scale " + bytes_text(max));
  }
  if (used == 0) lines.push_back("no device in use yet");
  // The largest live allocations, both levels, with their call sites.
  std::vector<uint32_t> ids;
  int tops = 0;
  for (const live::LiveTop& t : f.top) {
    if (t.size == 0) break;
    ids.push_back(t.stack_id);
    ++tops;
  }
  if (tops > 0) {
    const std::map<uint32_t, std::string> labels = sites.labels(p.run_dir, ids);
    lines.push_back("largest live allocations");
    for (int i = 0; i < tops; ++i) {
      const live::LiveTop& t = f.top[i];
      std::string line = "  " + pad(bytes_text(t.size), 11) + "  " + (t.level == live::LiveTop::kTensor ? "tensor" : "driver") +
                         "  device " + device_name(t.device) + "  " + labels.at(t.stack_id);
      lines.push_back(line);
    }
  }
  if (f.notices_total > 0) {
    lines.push_back("latest notices");
    std::vector<uint32_t> oom_ids;
    const uint64_t shown = std::min<uint64_t>({f.notices_total, live::kNotices, kNoticesShown});
    for (uint64_t k = 0; k < shown; ++k) {
      const live::LiveNotice& n = f.notices[(f.notices_total - 1 - k) % live::kNotices];
      if (n.type == live::LiveNotice::kOom || n.type == live::LiveNotice::kFrameworkOom) oom_ids.push_back(n.stack_id);
    }
    const std::map<uint32_t, std::string> labels = sites.labels(p.run_dir, oom_ids);
    for (uint64_t k = 0; k < shown; ++k) {
      const live::LiveNotice& n = f.notices[(f.notices_total - 1 - k) % live::kNotices];
      const auto site = labels.find(n.stack_id);
      lines.push_back("  " + clock_text(n.realtime_ns) + "  " +
                      notice_text(n, site == labels.end() ? std::string() : site->second));
    }
  }
  lines.push_back("gpumemprof report " + printable(p.run_dir));
  for (std::string& line : lines) line = cut_to_width(line, width);
  return lines;
}

}  // namespace gmp::tool::top
