#include "attribution_reader.h"

#include <charconv>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "input_file.h"
#include "json_input.h"

namespace gmp::reader {
namespace {

using nlohmann::json;

// Addresses are hex strings ("0x7f12a0000000") because JSON numbers lose precision above 2^53;
// a plain number is taken too.
std::optional<uint64_t> parse_hex(const std::string& s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  uint64_t v = 0;
  const char* end = s.data() + s.size();
  auto r = std::from_chars(s.data() + 2, end, v, 16);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

std::optional<uint64_t> address(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (!it->is_string()) return std::nullopt;
  return parse_hex(it->get_ref<const std::string&>());
}

std::optional<uint64_t> number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

std::optional<uint32_t> id_of(const json& j) {
  auto n = number(j, "id");
  if (!n || *n == 0 || *n > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*n);
}

std::optional<std::string> text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// "0x55d0c0001234" or "py:7".
std::optional<StackFrame> frame(const json& f) {
  if (!f.is_string()) return std::nullopt;
  const std::string& s = f.get_ref<const std::string&>();
  StackFrame out;
  if (s.rfind("py:", 0) == 0) {
    uint64_t id = 0;
    const char* end = s.data() + s.size();
    auto r = std::from_chars(s.data() + 3, end, id);
    if (r.ec != std::errc() || r.ptr != end || id == 0 || id > UINT32_MAX) return std::nullopt;
    out.value = id;
    out.python = true;
    return out;
  }
  auto v = parse_hex(s);
  if (!v) return std::nullopt;
  out.value = *v;
  return out;
}

// Applies one record; false when it is not one this reader understands.
bool apply(Attribution& a, const json& j, uint64_t seq) {
  if (!j.is_object()) return false;
  auto type = text(j, "type");
  if (!type) return false;
  if (*type == "module") {
    ModuleRecord m;
    auto path = text(j, "path");
    auto base = address(j, "base"), start = address(j, "start"), end = address(j, "end");
    if (!path || !base || !start || !end || *end <= *start) return false;
    m.path = *path;
    m.base = *base;
    m.start = *start;
    m.end = *end;
    m.build_id = text(j, "build_id").value_or("");
    // The spec names it loaded_ns; early collectors wrote seen_ns.
    m.loaded_ns = number(j, "loaded_ns").value_or(number(j, "seen_ns").value_or(0));
    m.loaded_seq = seq;
    a.modules.push_back(std::move(m));
    return true;
  }
  if (*type == "unloaded") {
    auto path = text(j, "path");
    auto base = address(j, "base");
    if (!path || !base) return false;
    for (auto it = a.modules.rbegin(); it != a.modules.rend(); ++it) {
      if (it->unloaded_seq == UINT64_MAX && it->base == *base && it->path == *path) {
        it->unloaded_seq = seq;
        it->unloaded_ns = number(j, "unloaded_ns").value_or(0);
        break;
      }
    }
    return true;  // an unload of an object never listed changes nothing
  }
  if (*type == "pyframe") {
    auto id = id_of(j);
    auto file = text(j, "file"), function = text(j, "function");
    auto line = j.find("line");
    if (!id || !file || !function || line == j.end() || !line->is_number_integer()) return false;
    a.pyframes.emplace(*id, PyFrameRecord{*file, *function, line->get<int64_t>()});
    return true;
  }
  if (*type == "stack") {
    auto id = id_of(j);
    auto frames = j.find("frames");
    if (!id || frames == j.end() || !frames->is_array()) return false;
    StackRecord s;
    s.seq = seq;
    s.frames.reserve(frames->size());
    for (const json& f : *frames) {
      auto parsed = frame(f);
      if (!parsed) return false;
      s.frames.push_back(*parsed);
    }
    a.stacks.emplace(*id, std::move(s));
    return true;
  }
  if (*type == "name") {
    auto id = id_of(j);
    auto name = text(j, "name");
    if (!id || !name) return false;
    a.names.emplace(*id, *name);
    return true;
  }
  return false;
}

}  // namespace

const StackRecord* Attribution::stack(uint32_t id) const {
  auto it = stacks.find(id);
  return it == stacks.end() ? nullptr : &it->second;
}

const PyFrameRecord* Attribution::pyframe(uint32_t id) const {
  auto it = pyframes.find(id);
  return it == pyframes.end() ? nullptr : &it->second;
}

const std::string* Attribution::name(uint32_t id) const {
  auto it = names.find(id);
  return it == names.end() ? nullptr : &it->second;
}

const ModuleRecord* Attribution::module_at(uint64_t addr, uint64_t seq) const {
  const ModuleRecord* loaded = nullptr;
  const ModuleRecord* any = nullptr;
  for (const ModuleRecord& m : modules) {  // a few hundred objects at most; callers cache
    if (addr < m.start || addr >= m.end) continue;
    any = &m;
    if (m.loaded_seq < seq && seq < m.unloaded_seq) loaded = &m;
  }
  return loaded != nullptr ? loaded : any;
}

Attribution parse_attribution(std::istream& in) {
  Attribution a;
  a.present = true;
  std::string line;
  uint64_t seq = 0;
  while (std::getline(in, line)) {
    ++seq;
    const bool unterminated = in.eof();  // getline hit the end before a '\n'
    if (line.empty()) continue;
    bool ok = false;
    std::string problem;
    try {
      auto j = parse_json(line, problem);
      ok = j && apply(a, *j, seq);
    } catch (const std::exception&) {
      ok = false;  // a record whose fields have unexpected types
    }
    if (ok) {
      ++a.records;
    } else if (unterminated) {
      a.partial_last_line = true;  // a write cut short, not garbage
    } else {
      ++a.skipped_lines;
    }
  }
  return a;
}

Attribution read_attribution(const std::string& path) {
  bool missing = false;
  std::string error;
  auto text = read_input_text(path, error, &missing);
  if (!text) {
    Attribution a;
    if (!missing) a.error = error;
    return a;
  }
  std::istringstream in(std::move(*text));
  return parse_attribution(in);
}

}  // namespace gmp::reader
