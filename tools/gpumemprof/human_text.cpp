#include "human_text.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bytes_text.h"
#include "count_text.h"
#include "json_views.h"

namespace gmp::tool {

namespace {

// The next code point of `s` from `i` (advanced past it); a byte that starts no valid sequence is
// returned alone, as U+FFFD would be shown: one column.
char32_t next_code_point(std::string_view s, size_t& i) {
  const auto byte = [&s](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  const size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    ++i;
    return 0xFFFD;
  }
  char32_t c = n == 1 ? b : b & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    c = (c << 6) | (byte(i + k) & 0x3F);
  }
  i += n;
  return c;
}

size_t code_point_width(char32_t c) {
  if ((c >= 0x300 && c <= 0x36F) || (c >= 0x200B && c <= 0x200F) || (c >= 0xFE00 && c <= 0xFE0F) ||
      (c >= 0x1AB0 && c <= 0x1AFF) || (c >= 0x20D0 && c <= 0x20FF)) {
    return 0;
  }
  const bool wide = (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF && c != 0x303F) ||
                    (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
                    (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) ||
                    (c >= 0x1F300 && c <= 0x1F64F) || (c >= 0x1F900 && c <= 0x1F9FF) ||
                    (c >= 0x20000 && c <= 0x3FFFD);
  return wide ? 2 : 1;
}

// The longest prefix of `s` (from its start, or its end when `from_end`) that fits in `width`
// columns, cut between code points.
std::string_view fitting(std::string_view s, size_t width, bool from_end) {
  std::vector<size_t> starts;  // byte offset of each code point
  for (size_t i = 0; i < s.size();) {
    starts.push_back(i);
    next_code_point(s, i);
  }
  size_t used = 0;
  if (!from_end) {
    for (size_t k = 0; k < starts.size(); ++k) {
      size_t i = starts[k];
      used += code_point_width(next_code_point(s, i));
      if (used > width) return s.substr(0, starts[k]);
    }
    return s;
  }
  for (size_t k = starts.size(); k-- > 0;) {
    size_t i = starts[k];
    used += code_point_width(next_code_point(s, i));
    if (used > width) return s.substr(k + 1 < starts.size() ? starts[k + 1] : s.size());
  }
  return s;
}

// A size's unit stays on the line of its number ("1.00 GiB" never breaks).
bool is_unit(const std::string& word) {
  for (const char* unit : {"B", "KiB", "MiB", "GiB", "TiB"}) {
    const size_t n = std::char_traits<char>::length(unit);
    if (word.compare(0, n, unit) == 0 && (word.size() == n || !std::isalpha(static_cast<unsigned char>(word[n])))) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string human_duration_ns(uint64_t ns) {
  char buf[32];
  if (ns >= 1'000'000'000ull) snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  else if (ns >= 1'000'000ull) snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  else snprintf(buf, sizeof buf, "%.1f \u00b5s", static_cast<double>(ns) / 1e3);
  return buf;
}

size_t output_width() {
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long n = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && n > 0) return static_cast<size_t>(n);
  }
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

size_t display_width(std::string_view s) {
  size_t width = 0;
  for (size_t i = 0; i < s.size();) width += code_point_width(next_code_point(s, i));
  return width;
}

std::string pad(std::string_view s, size_t width) {
  const size_t w = display_width(s);
  return std::string(s) + std::string(w < width ? width - w : 0, ' ');
}

std::string elide_middle(std::string_view s, size_t width) {
  constexpr std::string_view kEllipsis = "...";
  if (display_width(s) <= width) return std::string(s);
  if (width <= kEllipsis.size()) return std::string(fitting(s, width, false));
  const size_t room = width - kEllipsis.size();
  return std::string(fitting(s, room - room / 2, false)) + std::string(kEllipsis) +
         std::string(fitting(s, room / 2, true));
}

LineLayout line_layout(const std::string& line, size_t width, size_t hang) {
  const size_t text = std::min(line.find_first_not_of(' '), line.size());
  // The last gap in the first half: a table's row keeps its columns, its last one goes on under itself.
  size_t column = 0;
  for (size_t gap = line.find("  ", text); gap != std::string::npos && gap < width / 2; gap = line.find("  ", column)) {
    column = std::min(line.find_first_not_of(' ', gap), line.size());
  }
  if (column != 0) return {column, column};
  if (const size_t tool = line.find("gpumemprof "); tool != std::string::npos && tool < 20) {
    if (const size_t end = line.find(' ', tool + 11); end != std::string::npos) return {text, end + 1};
  }
  return {text, text + hang};
}

std::string fold_lines(const std::string& text, size_t width, size_t hang) {
  std::string out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (display_width(line) <= width) {
      out += line + "\n";
      continue;
    }
    const LineLayout l = line_layout(line, width, hang);
    out += wrap(line.substr(l.head), line.substr(0, l.head), std::string(l.indent, ' '), width);
  }
  return out;
}

std::string fit_rest(const std::string& s, size_t used) {
  constexpr size_t kLeast = 20;
  const size_t width = output_width();
  return elide_middle(s, width > used + kLeast ? width - used : kLeast);
}

std::string wrap(const std::string& text, const std::string& first, const std::string& rest, size_t width) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!words.empty() && is_unit(word))
      words.back() += " " + word;
    else
      words.push_back(std::move(word));
  }
  std::string out, line = first;
  bool empty = true;
  for (const std::string& word : words) {
    if (!empty && display_width(line) + 1 + display_width(word) > width) {
      out += line + "\n";
      line = rest;
      empty = true;
    }
    if (!empty) line += ' ';
    line += word;
    empty = false;
  }
  return out + line + "\n";
}

void say(const std::string& text, const std::string& first, const std::string& rest, std::FILE* to) {
  std::fputs(wrap(text, first, rest, output_width()).c_str(), to);
}

void print_table(std::vector<std::vector<std::string>> table, const TableLayout& given) {
  constexpr size_t kElasticMin = 20;
  TableLayout layout = given;
  std::vector<size_t> width;
  for (const auto& row : table) {
    if (row.size() == 1 && table.front().size() > 1) continue;  // a line of its own
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  }
  auto total_width = [&] {
    size_t total = layout.indent;
    for (size_t c = 0; c < width.size(); ++c) total += width[c] + (c ? layout.gap : 0);
    return total;
  };
  if (layout.gap > 1 && total_width() > output_width()) layout.gap = 1;  // narrower before anything is cut
  if (layout.elastic >= 0 && static_cast<size_t>(layout.elastic) < width.size()) {
    const size_t e = static_cast<size_t>(layout.elastic);
    const size_t total = total_width();
    if (total > output_width()) {
      const size_t excess = total - output_width();
      width[e] = std::min(width[e], std::max(kElasticMin, width[e] > excess ? width[e] - excess : 0));
      for (size_t r = layout.header_rows; r < table.size(); ++r) {
        if (e < table[r].size()) table[r][e] = elide_middle(table[r][e], width[e]);
      }
    }
  }
  for (const auto& row : table) {
    if (row.size() == 1 && table.front().size() > 1) {
      std::printf("%s%s\n", std::string(layout.indent, ' ').c_str(), row.front().c_str());
      continue;
    }
    std::string line(layout.indent, ' ');
    for (size_t c = 0; c < row.size(); ++c) {
      const bool right = std::find(layout.right.begin(), layout.right.end(), c) != layout.right.end();
      const std::string gap = c + 1 < row.size() ? std::string(layout.gap, ' ') : "";
      if (right) line += std::string(width[c] - std::min(width[c], display_width(row[c])), ' ') + row[c] + gap;
      else line += (c + 1 < row.size() ? pad(row[c], width[c]) : row[c]) + gap;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

std::vector<std::vector<std::string>> two_row_header(const std::vector<std::string>& labels) {
  std::vector<std::vector<std::string>> rows(2);
  for (const std::string& label : labels) {
    const size_t space = label.rfind(' ');
    rows[0].push_back(space == std::string::npos ? label : label.substr(0, space));
    rows[1].push_back(space == std::string::npos ? "" : label.substr(space + 1));
  }
  return rows;
}

std::string signed_bytes(int64_t v) {
  if (v == 0) return "0 B";
  const uint64_t mag = v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  return (v < 0 ? "-" : "+") + bytes_text(mag);
}

std::vector<std::string> oom_count_parts(const Summary& s) {
  uint64_t raised = 0;
  for (const DeviceFigures& d : s.devices) raised += d.stats.framework.ooms;
  if (s.oom.failures == 0 && raised == 0) return {};
  std::vector<std::string> parts = {counted(s.oom.failures, "allocation") + " refused by the driver for lack of memory"};
  if (raised > 0) parts.push_back("PyTorch raised " + counted(raised, "OutOfMemoryError"));
  parts.push_back(counted(s.oom.bundles_written, "bundle") + " written");
  parts.push_back(counted(s.oom.recovered, "episode") + " recovered by a later allocation of the failed size");
  return parts;
}

std::string marker_label(const analysis::Marker& m) {
  using Type = analysis::Marker::Type;
  switch (m.type) {
    case Type::AlertFired: {
      std::string s = alert_type_name(m.alert);
      for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return s + " alert";
    }
    case Type::AlertCleared: return alert_type_name(m.alert) + " alert cleared";
    case Type::AllocFailed:
      return std::string(api_name(m.api)) + " of " + bytes_text(m.size) + " failed (" + cuda_error_name(m.result) + ")";
    case Type::OomBundle: return "OOM bundle written";
    case Type::OomRecovered: return "OOM recovered: the failed size allocated";
    case Type::Cleanup:
      return "watchdog trimmed " + counted(m.threshold, "pool") + ": " + bytes_text(m.size) + " given back";
  }
  return "?";
}

}  // namespace gmp::tool
