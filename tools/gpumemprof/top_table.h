// `gpumemprof top`'s table (docs/live.md, "gpumemprof top"): one row per process and device, its
// cells, its order, its columns fitted to a width, and the same figures as JSON. Shared by the
// plain output (--once), the screen and --json, so the three never show different figures.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "live_reader.h"

namespace gmp::tool::top {

enum Column {
  kPid, kProcess, kRank, kDev, kAllocated, kReserved, kPeak, kTensors, kCache, kOutside, kNvml, kAlerts, kOoms,
  kAge, kState, kColumnCount
};
const char* column_title(int column);  // "PID", ..., "NVML USED/TOTAL", ...

// A sort key: numbers first, then text.
struct Key {
  uint64_t n = 0;
  std::string s;
  bool operator<(const Key& o) const { return n != o.n ? n < o.n : s < o.s; }
};

struct Row {
  size_t process = 0;  // index into the scan's processes
  int slot = -1;       // its device slot; -1: a process with no device in use
  std::array<std::string, kColumnCount> cells;
  std::array<Key, kColumnCount> keys;
};

// The rows of `scan` at realtime `now_ns`, in the scan's order (rank, pid), devices in slot order.
std::vector<Row> build_rows(const reader::LiveScan& scan, uint64_t now_ns);
// Sorted by `column`: figures largest first, names and states A to Z; `reversed` the other way.
// Ties keep the scan's order.
void sort_rows(std::vector<Row>& rows, int column, bool reversed);
bool sorted_descending(int column, bool reversed);

// The header and the rows as lines of at most `width` display columns: columns that do not fit
// are dropped from the right, never wrapped. `columns_shown` (when given) says how many were kept.
std::vector<std::string> table_lines(const std::vector<Row>& rows, size_t width, int* columns_shown = nullptr);

// "4m05s": an age in at most six characters.
std::string age_text(uint64_t ns);
// `s` cut to at most `width` display columns (never mid-character).
std::string cut_to_width(const std::string& s, size_t width);

// {"processes": [...], "unreadable": [...]} with exact integers (docs/live.md, "JSON").
nlohmann::json scan_json(const reader::LiveScan& scan, uint64_t now_ns);

}  // namespace gmp::tool::top
