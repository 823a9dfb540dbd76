// The documents against the code: the tables of docs/trace-format.md must say exactly what
// format/event.h and format/trace_format.h define, every relative link in README.md and docs/
// must lead to a file (and heading) the project has, the Python package's numbers must be the C
// API's and the trace's, and docs/architecture.md's map must name what exists. GMP_SOURCE_DIR is
// the source tree's root.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "event.h"
#include "../../include/gpumemprof.h"
#include "trace_format.h"

namespace gmp {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = GMP_SOURCE_DIR;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// The first `code span` of a cell, or the whole cell without backticks.
std::string name_in(const std::string& cell) {
  const size_t a = cell.find('`');
  const size_t b = a == std::string::npos ? a : cell.find('`', a + 1);
  return b == std::string::npos ? cell : cell.substr(a + 1, b - a - 1);
}

using Row = std::vector<std::string>;

// The body rows of the table under the heading `## <section>` (header and separator rows dropped).
std::vector<Row> table(const std::string& doc, const std::string& section) {
  std::vector<Row> rows;
  std::istringstream in(doc);
  bool inside = false;
  int seen = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) {
      inside = trim(line.substr(3)) == section;
      continue;
    }
    if (!inside || line.empty() || line[0] != '|') continue;
    if (++seen <= 2) continue;  // header, then |---|
    Row cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|') {
        cells.push_back(trim(cell));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    rows.push_back(cells);
  }
  return rows;
}

struct Field {
  std::string name;
  size_t offset, size;
};

#define GMP_FIELD(type, f) Field{#f, offsetof(type, f), sizeof(type::f)}

// Each row of `section` must be {offset, size, `name`, ...} of `fields`, in the same order.
void expect_layout(const std::string& doc, const std::string& section, const std::vector<Field>& fields,
                   size_t record_size) {
  const auto rows = table(doc, section);
  ASSERT_EQ(rows.size(), fields.size()) << "rows of the " << section << " table";
  size_t end = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_GE(rows[i].size(), 3u) << section << " row " << i;
    EXPECT_EQ(name_in(rows[i][2]), fields[i].name) << section << " row " << i;
    EXPECT_EQ(rows[i][0], std::to_string(fields[i].offset)) << section << " " << fields[i].name;
    EXPECT_EQ(rows[i][1], std::to_string(fields[i].size)) << section << " " << fields[i].name;
    end = fields[i].offset + fields[i].size;
  }
  EXPECT_EQ(end, record_size) << "the " << section << " table covers the whole record";
}

// Each row of `section` must be {number, `name`} for every named value of the enum, in order.
template <typename Enum, typename Name>
void expect_numbering(const std::string& doc, const std::string& section, int last, Name name_of) {
  std::vector<std::pair<std::string, std::string>> code;
  for (int i = 1; i <= last; ++i) {
    const std::string name(name_of(static_cast<Enum>(i)));
    if (name != "none" && name != "unknown") code.emplace_back(std::to_string(i), name);
  }
  std::vector<std::pair<std::string, std::string>> doc_rows;
  for (const Row& r : table(doc, section)) {
    if (r.size() >= 2) doc_rows.emplace_back(r[0], name_in(r[1]));
  }
  EXPECT_EQ(doc_rows.size(), code.size()) << "rows of the " << section << " table of docs/trace-format.md";
  for (size_t i = 0; i < std::max(doc_rows.size(), code.size()); ++i) {
    const auto said = i < doc_rows.size() ? doc_rows[i].first + " " + doc_rows[i].second : "(no row)";
    const auto is = i < code.size() ? code[i].first + " " + code[i].second : "(nothing)";
    EXPECT_EQ(said, is) << section << " row " << i + 1 << ": docs/trace-format.md against format/event.cpp";
  }
}

class TraceFormatDoc : public ::testing::Test {
 protected:
  std::string doc = read_text(kSource / "docs" / "trace-format.md");
};

TEST_F(TraceFormatDoc, HeaderTableMatchesTraceHeader) {
  expect_layout(doc, "Header",
                {GMP_FIELD(TraceHeader, magic), GMP_FIELD(TraceHeader, version), GMP_FIELD(TraceHeader, header_size),
                 GMP_FIELD(TraceHeader, event_size), GMP_FIELD(TraceHeader, pid),
                 GMP_FIELD(TraceHeader, start_realtime_ns), GMP_FIELD(TraceHeader, start_monotonic_ns),
                 GMP_FIELD(TraceHeader, segment), GMP_FIELD(TraceHeader, checkpoint_size),
                 GMP_FIELD(TraceHeader, first_event), GMP_FIELD(TraceHeader, reserved)},
                sizeof(TraceHeader));
  const auto rows = table(doc, "Header");
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(name_in(rows[0][3]), std::string(kTraceMagic, sizeof kTraceMagic));
  EXPECT_EQ(rows[1][3], std::to_string(kTraceVersion));
}

TEST_F(TraceFormatDoc, EventTableMatchesEvent) {
  expect_layout(doc, "Event record",
                {GMP_FIELD(Event, timestamp_ns), GMP_FIELD(Event, address), GMP_FIELD(Event, size),
                 GMP_FIELD(Event, stream), GMP_FIELD(Event, object), GMP_FIELD(Event, value),
                 GMP_FIELD(Event, thread_id), GMP_FIELD(Event, stack_id), GMP_FIELD(Event, device),
                 GMP_FIELD(Event, kind), GMP_FIELD(Event, op), GMP_FIELD(Event, api), GMP_FIELD(Event, result)},
                sizeof(Event));
}

TEST_F(TraceFormatDoc, KindTableMatchesKindNames) { expect_numbering<Kind>(doc, "Kinds", 255, kind_name); }

TEST_F(TraceFormatDoc, OpTableMatchesOpNames) { expect_numbering<Op>(doc, "Operations", 255, op_name); }

TEST_F(TraceFormatDoc, EntryPointTableMatchesApiNames) {
  expect_numbering<Api>(doc, "Entry points", static_cast<int>(Api::Count_) - 1, api_name);
}

// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
std::string anchor_of(const std::string& heading) {
  std::string out;
  for (size_t i = 0; i < heading.size(); ++i) {
    const auto c = static_cast<unsigned char>(heading[i]);
    if (c == 0xe2 && i + 2 < heading.size() && static_cast<unsigned char>(heading[i + 1]) == 0x80) {
      i += 2;  // U+2000-U+203F: dashes, quotes and other punctuation are dropped too
    } else if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) {
      out += static_cast<char>(std::tolower(c));
    } else if (c == ' ') {
      out += '-';
    }
  }
  return out;
}

// The lines of a markdown text outside ``` blocks (fence lines included, harmlessly).
std::vector<std::string> prose_lines(const std::string& doc) {
  std::vector<std::string> out;
  std::istringstream in(doc);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (!fenced) out.push_back(line);
  }
  return out;
}

std::set<std::string> anchors_in(const std::string& doc) {
  std::set<std::string> out;
  for (const std::string& line : prose_lines(doc)) {
    if (!line.empty() && line[0] == '#') out.insert(anchor_of(trim(line.substr(line.find_first_not_of('#')))));
  }
  return out;
}

// Every `](target)` outside code blocks and code spans.
std::vector<std::string> link_targets(const std::string& doc) {
  std::vector<std::string> out;
  for (const std::string& line : prose_lines(doc)) {
    bool code = false;
    for (size_t i = 0; i + 1 < line.size(); ++i) {
      if (line[i] == '`') code = !code;
      if (code || line[i] != ']' || line[i + 1] != '(') continue;
      const size_t end = line.find(')', i + 2);
      if (end != std::string::npos) out.push_back(line.substr(i + 2, end - i - 2));
    }
  }
  return out;
}

TEST(DocLinks, EveryRelativeLinkResolves) {
  std::vector<fs::path> docs = {kSource / "README.md"};
  for (const auto& e : fs::directory_iterator(kSource / "docs")) {
    if (e.path().extension() == ".md") docs.push_back(e.path());
  }
  ASSERT_GT(docs.size(), 5u);
  for (const fs::path& md : docs) {
    const std::string text = read_text(md);
    for (const std::string& target : link_targets(text)) {
      if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target.rfind("mailto:", 0) == 0) {
        continue;
      }
      const size_t hash = target.find('#');
      const std::string file = target.substr(0, hash);
      const fs::path linked = file.empty() ? md : md.parent_path() / file;
      EXPECT_TRUE(fs::exists(linked)) << md.filename() << " links to " << target;
      if (hash == std::string::npos || !fs::is_regular_file(linked)) continue;
      const std::string anchor = target.substr(hash + 1);
      EXPECT_TRUE(anchors_in(read_text(linked)).count(anchor) != 0)
          << md.filename() << " links to " << target << ", a heading " << linked.filename() << " does not have";
    }
  }
}

// The Python package (python/gpumemprof/_native.py) reads the C API's records and figures by number;
// its numbers must be the C API's and the trace's.
class PythonPackageNumbers : public ::testing::Test {
 protected:
  std::string native = read_text(kSource / "python" / "gpumemprof" / "_native.py");

  // {number: "name"} from a line `NAME = {1: "a", 2: "b"}`.
  std::map<int, std::string> dict(const std::string& name) const {
    std::map<int, std::string> out;
    const size_t at = native.find("\n" + name + " = {");
    if (at == std::string::npos) return out;
    const std::string body = native.substr(at, native.find('}', at) - at);
    std::istringstream in(body.substr(body.find('{') + 1));
    for (std::string item; std::getline(in, item, ',');) {
      const size_t colon = item.find(':');
      const size_t q1 = item.find('"'), q2 = item.rfind('"');
      if (colon == std::string::npos || q1 == q2) continue;
      out[std::stoi(trim(item.substr(0, colon)))] = item.substr(q1 + 1, q2 - q1 - 1);
    }
    return out;
  }
};

TEST_F(PythonPackageNumbers, KindNamesAreTheTracesKinds) {
  const auto kinds = dict("KIND_NAMES");
  ASSERT_EQ(kinds.size(), 6u);
  // Kind 0 is None in the trace; the records the package reads with it are tensors (the C API's
  // "detail: the kind (1-5), 0 for a tensor").
  EXPECT_EQ(kinds.at(0), "tensor");
  for (int k = 1; k <= 5; ++k) EXPECT_EQ(kinds.at(k), kind_name(static_cast<Kind>(k))) << "kind " << k;
}

TEST_F(PythonPackageNumbers, AlertNamesAreTheTracesAlerts) {
  const auto alerts = dict("ALERT_NAMES");
  ASSERT_EQ(alerts.size(), 4u);
  for (const auto& [n, name] : alerts) EXPECT_EQ(name, alert_type_name(static_cast<AlertType>(n))) << "alert " << n;
}

TEST_F(PythonPackageNumbers, RecordTypesAreTheCApis) {
  const std::string line = "ALLOCATION, DEALLOCATION, ALERT, ALERT_CLEARED, CLEANUP, OOM = ";
  const size_t at = native.find(line);
  ASSERT_NE(at, std::string::npos) << "_native.py no longer names the record types on one line";
  std::istringstream in(native.substr(at + line.size(), native.find('\n', at) - at - line.size()));
  std::vector<int> numbers;
  for (std::string n; std::getline(in, n, ',');) numbers.push_back(std::stoi(trim(n)));
  EXPECT_EQ(numbers, (std::vector<int>{GPUMEMPROF_ALLOCATION, GPUMEMPROF_DEALLOCATION, GPUMEMPROF_ALERT,
                                       GPUMEMPROF_ALERT_CLEARED, GPUMEMPROF_CLEANUP, GPUMEMPROF_OOM}));
}

// docs/architecture.md is the map a newcomer reads first: every file and folder it names exists,
// every source folder and every subcommand is on it.
class ArchitectureMap : public ::testing::Test {
 protected:
  std::string doc = read_text(kSource / "docs" / "architecture.md");

  static std::vector<std::string> code_spans(const std::string& text) {
    std::vector<std::string> out;
    for (size_t a = text.find('`'); a != std::string::npos; a = text.find('`', a + 1)) {
      const size_t b = text.find('`', a + 1);
      if (b == std::string::npos) break;
      out.push_back(text.substr(a + 1, b - a - 1));
      a = b;
    }
    return out;
  }
};

TEST_F(ArchitectureMap, EveryFileItNamesExists) {
  // Every file of the sources by name, and by name without its extension (the map says `ring.*`).
  std::set<std::string> names, stems;
  for (const char* dir : {"settings", "format", "model", "collector", "shim", "device_limit", "tools", "include",
                          "python", "scripts", "cmake", "tests", "docs"}) {
    for (const auto& e : fs::recursive_directory_iterator(kSource / dir)) {
      names.insert(e.path().filename().string());
      stems.insert(e.path().stem().string());
    }
  }
  int checked = 0;
  for (const std::string& span : code_spans(doc)) {
    if (span.find(' ') != std::string::npos || span.find('=') != std::string::npos) continue;  // code, not a name
    const size_t slash = span.rfind('/');
    if (slash != std::string::npos && slash + 1 == span.size()) {  // a folder: `shim/`, `tools/analysis/`
      if (span.find('.') == std::string::npos && span.find('*') == std::string::npos && span[0] != '/') {
        // tools/'s folders are also named as tools/ lists them: `reader/`.
        EXPECT_TRUE(fs::is_directory(kSource / span) || fs::is_directory(kSource / "tools" / span))
            << "architecture.md names the folder " << span;
        ++checked;
      }
      continue;
    }
    const std::string base = slash == std::string::npos ? span : span.substr(slash + 1);
    const size_t dot = base.rfind('.');
    if (dot == std::string::npos || dot == 0) continue;
    const std::string ext = base.substr(dot + 1);
    if (const size_t star = base.find('*'); star != std::string::npos && star < dot) {  // `wrap_*.cpp`
      const std::string prefix = base.substr(0, star);
      const auto next = names.lower_bound(prefix);
      EXPECT_TRUE(next != names.end() && next->rfind(prefix, 0) == 0) << "architecture.md names " << span;
    } else if (ext == "*") {
      EXPECT_TRUE(stems.count(base.substr(0, dot))) << "architecture.md names " << span;
    } else if (ext == "h" || ext == "cpp" || ext == "cmake" || ext == "py" || ext == "map" || ext == "js" ||
               ext == "css" || ext == "sh") {
      EXPECT_TRUE(names.count(base)) << "architecture.md names " << span;
    } else {
      continue;  // a run directory's file (manifest.json), not a source
    }
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST_F(ArchitectureMap, EverySourceFolderHasItsSection) {
  for (const char* dir : {"shim/", "device_limit/", "collector/", "format/", "model/", "settings/", "tools/gpumemprof/",
                          "tools/analysis/", "tools/reader/", "include/"}) {
    EXPECT_NE(doc.find(std::string("\n## ") + dir), std::string::npos) << "architecture.md has no section for " << dir;
  }
}

TEST_F(ArchitectureMap, EverySubcommandIsOnIt) {
  const std::string main_cpp = read_text(kSource / "tools" / "gpumemprof" / "main.cpp");
  int found = 0;
  for (size_t at = main_cpp.find("{\""); at != std::string::npos; at = main_cpp.find("{\"", at + 1)) {
    const size_t end = main_cpp.find('"', at + 2);
    const std::string name = main_cpp.substr(at + 2, end - at - 2);
    if (main_cpp.compare(end, 3, "\", ") != 0 || main_cpp.find("_main}", end) > main_cpp.find('}', end)) continue;
    ++found;
    EXPECT_NE(doc.find(name + "_command.cpp"), std::string::npos) << "architecture.md does not name " << name;
  }
  EXPECT_GE(found, 7);
}

}  // namespace
}  // namespace gmp
