#include "top_table.h"

#include <algorithm>
#include <cstdio>

#include "bytes_text.h"
#include "human_text.h"
#include "terminal_text.h"

namespace gmp::tool::top {
namespace {

using live::LiveDevice;

struct ColumnInfo {
  const char* title;
  bool right;    // right-aligned (figures)
  bool figures;  // sorted largest first
};
constexpr ColumnInfo kColumns[kColumnCount] = {
    {"PID", true, false},        {"PROCESS", false, false}, {"RANK", true, false},  {"DEV", true, false},
    {"ALLOCATED", true, true},   {"RESERVED", true, true},  {"PEAK", true, true},   {"TENSORS", true, true},
    {"CACHE", true, true},       {"OUTSIDE", true, true},   {"NVML USED/TOTAL", true, true},
    {"ALERTS", true, true},      {"OOMS", true, true},      {"AGE", true, true},    {"STATE", false, false},
};

constexpr size_t kProcessWidth = 24;  // a longer name is elided in its middle
constexpr const char* kNone = "-";

uint64_t age_ns(const live::LiveFile& f, uint64_t now_ns) {
  return now_ns > f.start_realtime_ns ? now_ns - f.start_realtime_ns : 0;
}

void set(Row& r, int column, std::string cell, uint64_t n, std::string s = {}) {
  r.cells[column] = std::move(cell);
  r.keys[column] = Key{n, std::move(s)};
}

void set_bytes(Row& r, int column, bool known, uint64_t bytes) {
  if (known) set(r, column, bytes_text(bytes), bytes);
  else set(r, column, kNone, 0);
}

Row row_of(const reader::LiveProcess& p, size_t index, int slot, uint64_t now_ns) {
  const live::LiveFile& f = *p.file;
  Row r;
  r.process = index;
  r.slot = slot;
  const std::string program = printable(live::text_of(f.program));
  set(r, kPid, std::to_string(f.pid), f.pid);
  set(r, kProcess, elide_middle(program, kProcessWidth), 0, program);
  // No rank sorts after every rank.
  if (f.rank >= 0) set(r, kRank, std::to_string(f.rank), static_cast<uint64_t>(f.rank));
  else set(r, kRank, kNone, UINT64_MAX);
  set(r, kAge, age_text(age_ns(f, now_ns)), age_ns(f, now_ns));
  set(r, kState, reader::liveness_name(p.liveness), 0, reader::liveness_name(p.liveness));
  if (slot < 0) {
    set(r, kDev, kNone, UINT64_MAX);
    for (int c : {kAllocated, kReserved, kPeak, kTensors, kCache, kOutside, kNvml, kAlerts, kOoms}) set(r, c, kNone, 0);
    return r;
  }
  const LiveDevice& d = f.devices[slot];
  const bool framework = (d.flags & LiveDevice::kFramework) != 0;
  const bool nvml = (d.flags & LiveDevice::kNvml) != 0;
  set(r, kDev, std::to_string(d.ordinal), static_cast<uint64_t>(d.ordinal));
  set_bytes(r, kAllocated, true, d.allocated);
  set_bytes(r, kReserved, true, d.reserved);
  set_bytes(r, kPeak, true, d.reserved_peak);
  set_bytes(r, kTensors, framework, d.tensors);
  set_bytes(r, kCache, framework, d.cached);
  set_bytes(r, kOutside, framework, d.outside);
  if (nvml) {
    set(r, kNvml, bytes_text(d.nvml_device_used) + "/" + bytes_text(d.nvml_device_total), d.nvml_device_used);
  } else {
    set(r, kNvml, kNone, 0);
  }
  set(r, kAlerts, std::to_string(d.alerts_fired), d.alerts_fired);
  set(r, kOoms, std::to_string(d.ooms), d.ooms);
  return r;
}

size_t next_char(const std::string& s, size_t i) {
  ++i;
  while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
  return i;
}

nlohmann::json optional_int(int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

nlohmann::json device_json(const LiveDevice& d) {
  nlohmann::json j = {{"ordinal", d.ordinal},
                      {"total_bytes", d.total_bytes},
                      {"allocated", d.allocated},
                      {"allocated_peak", d.allocated_peak},
                      {"reserved", d.reserved},
                      {"reserved_peak", d.reserved_peak},
                      {"live_allocations", d.live_allocations},
                      {"alloc_count", d.alloc_count},
                      {"free_count", d.free_count},
                      {"failed_allocs", d.failed_allocs},
                      {"ooms", d.ooms},
                      {"alerts_fired", d.alerts_fired}};
  j["framework"] = nullptr;
  if (d.flags & LiveDevice::kFramework) {
    j["framework"] = {{"tensors", d.tensors},
                      {"tensors_peak", d.tensors_peak},
                      {"reserved", d.framework_reserved},
                      {"reserved_peak", d.framework_reserved_peak},
                      {"cached", d.cached},
                      {"outside", d.outside},
                      {"outside_peak", d.outside_peak},
                      {"pending_free", d.pending_free}};
  }
  j["graphs"] = nullptr;
  if (d.flags & LiveDevice::kGraphs) j["graphs"] = {{"reserved", d.graph_reserved}, {"used", d.graph_used}};
  j["nvml"] = nullptr;
  if (d.flags & LiveDevice::kNvml) {
    j["nvml"] = {{"device_used", d.nvml_device_used},
                 {"device_total", d.nvml_device_total},
                 {"process_used", d.nvml_process_used},
                 {"process_used_peak", d.nvml_process_used_peak}};
  }
  return j;
}

}  // namespace

const char* column_title(int column) { return kColumns[column].title; }

std::string age_text(uint64_t ns) {
  const uint64_t s = ns / 1'000'000'000;
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llus", static_cast<unsigned long long>(s));
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%llum%02llus", static_cast<unsigned long long>(s / 60),
                                   static_cast<unsigned long long>(s % 60));
  else if (s < 86400) std::snprintf(buf, sizeof buf, "%lluh%02llum", static_cast<unsigned long long>(s / 3600),
                                    static_cast<unsigned long long>(s % 3600 / 60));
  else std::snprintf(buf, sizeof buf, "%llud%02lluh", static_cast<unsigned long long>(s / 86400),
                     static_cast<unsigned long long>(s % 86400 / 3600));
  return buf;
}

std::string cut_to_width(const std::string& s, size_t width) {
  if (display_width(s) <= width) return s;
  size_t end = 0;
  for (size_t next = next_char(s, 0); next <= s.size(); next = next_char(s, next)) {
    if (display_width(std::string_view(s).substr(0, next)) > width) break;
    end = next;
    if (next == s.size()) break;
  }
  return s.substr(0, end);
}

std::vector<Row> build_rows(const reader::LiveScan& scan, uint64_t now_ns) {
  std::vector<Row> rows;
  for (size_t i = 0; i < scan.processes.size(); ++i) {
    const live::LiveFile& f = *scan.processes[i].file;
    bool any = false;
    // Slots are taken in order of first use; a slot past devices_used is not the writer's.
    const uint32_t used = std::min<uint32_t>(f.devices_used, live::kDevices);
    for (uint32_t slot = 0; slot < used; ++slot) {
      if (f.devices[slot].ordinal < 0) continue;
      rows.push_back(row_of(scan.processes[i], i, static_cast<int>(slot), now_ns));
      any = true;
    }
    if (!any) rows.push_back(row_of(scan.processes[i], i, -1, now_ns));
  }
  return rows;
}

bool sorted_descending(int column, bool reversed) { return kColumns[column].figures != reversed; }

void sort_rows(std::vector<Row>& rows, int column, bool reversed) {
  const bool descending = sorted_descending(column, reversed);
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    return descending ? b.keys[column] < a.keys[column] : a.keys[column] < b.keys[column];
  });
}

std::vector<std::string> table_lines(const std::vector<Row>& rows, size_t width, int* columns_shown) {
  std::array<size_t, kColumnCount> widths{};
  for (int c = 0; c < kColumnCount; ++c) {
    widths[c] = display_width(kColumns[c].title);
    for (const Row& r : rows) widths[c] = std::max(widths[c], display_width(r.cells[c]));
  }
  // As many columns from the left as fit, two spaces apart; at least the first, cut to the width.
  int shown = 1;
  size_t used = widths[0];
  while (shown < kColumnCount && used + 2 + widths[shown] <= width) used += 2 + widths[shown++];
  if (columns_shown != nullptr) *columns_shown = shown;
  auto line = [&](auto cell) {
    std::string out;
    for (int c = 0; c < shown; ++c) {
      const std::string text = cell(c);
      const size_t w = display_width(text);
      const std::string fill(widths[c] > w ? widths[c] - w : 0, ' ');
      if (c > 0) out += "  ";
      if (kColumns[c].right) out += fill + text;
      else out += c + 1 == shown ? text : text + fill;  // the last column is never padded
    }
    return cut_to_width(out, width);
  };
  std::vector<std::string> lines;
  lines.push_back(line([](int c) { return std::string(kColumns[c].title); }));
  for (const Row& r : rows) lines.push_back(line([&](int c) { return r.cells[c]; }));
  return lines;
}

nlohmann::json scan_json(const reader::LiveScan& scan, uint64_t now_ns) {
  nlohmann::json processes = nlohmann::json::array();
  for (const reader::LiveProcess& p : scan.processes) {
    const live::LiveFile& f = *p.file;
    uint64_t alerts = 0;
    for (uint64_t a : f.alerts_fired) alerts += a;
    nlohmann::json devices = nlohmann::json::array();
    const uint32_t used = std::min<uint32_t>(f.devices_used, live::kDevices);
    for (uint32_t slot = 0; slot < used; ++slot) {
      if (f.devices[slot].ordinal >= 0) devices.push_back(device_json(f.devices[slot]));
    }
    processes.push_back({{"pid", f.pid},
                         {"program", live::text_of(f.program)},
                         {"host", live::text_of(f.host)},
                         {"job_id", live::text_of(f.job_id)},
                         {"rank", optional_int(f.rank)},
                         {"local_rank", optional_int(f.local_rank)},
                         {"world_size", optional_int(f.world_size)},
                         {"run_dir", p.run_dir},
                         {"state", reader::liveness_name(p.liveness)},
                         {"torn", p.torn},
                         {"start_realtime_ns", f.start_realtime_ns},
                         {"heartbeat_realtime_ns", f.heartbeat_realtime_ns},
                         {"age_ns", age_ns(f, now_ns)},
                         {"published", f.published},
                         {"events", f.events},
                         {"lost", f.lost},
                         {"oom_failures", f.oom_failures},
                         {"oom_bundles", f.oom_bundles},
                         {"oom_recovered", f.oom_recovered},
                         {"alerts_fired", alerts},
                         {"cleanups", f.cleanups},
                         {"cleanup_bytes", f.cleanup_bytes},
                         {"host_pinned", f.host_pinned},
                         {"host_pinned_peak", f.host_pinned_peak},
                         {"devices", devices}});
  }
  return {{"time_ns", now_ns}, {"processes", processes}, {"unreadable", scan.unreadable}};
}

}  // namespace gmp::tool::top
