#include "attribution_records.h"

#include <charconv>
#include <cstdio>

#include "json_fields.h"

namespace gmp {
namespace {

using nlohmann::json;
using reader::as_string;
using reader::member;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::optional<uint64_t> parse_hex(const std::string& s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  uint64_t v = 0;
  const char* end = s.data() + s.size();
  auto r = std::from_chars(s.data() + 2, end, v, 16);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

// A hex string, or a plain number as a hand-written file might hold.
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

std::string frame_text(const StackFrame& f) { return f.python ? "py:" + std::to_string(f.value) : hex(f.value); }

std::optional<StackFrame> parse_frame(const json& f) {
  if (!f.is_string()) return std::nullopt;
  const std::string& s = f.get_ref<const std::string&>();
  if (s.rfind("py:", 0) == 0) {
    uint64_t id = 0;
    const char* end = s.data() + s.size();
    auto r = std::from_chars(s.data() + 3, end, id);
    if (r.ec != std::errc() || r.ptr != end || id == 0 || id > UINT32_MAX) return std::nullopt;
    return StackFrame{id, true};
  }
  auto v = parse_hex(s);
  if (!v) return std::nullopt;
  return StackFrame{*v, false};
}

template <typename Line>
std::optional<AttributionLine> read_as(const json& j) {
  Line line;
  if (!from_json(j, line)) return std::nullopt;
  return line;
}

}  // namespace

json to_json(const ModuleLine& m) {
  return {{"type", "module"}, {"path", m.path},         {"base", hex(m.base)},    {"start", hex(m.start)},
          {"end", hex(m.end)}, {"build_id", m.build_id}, {"seen_ns", m.loaded_ns}};
}

json to_json(const UnloadedLine& u) {
  return {{"type", "unloaded"}, {"path", u.path}, {"base", hex(u.base)}, {"unloaded_ns", u.unloaded_ns}};
}

json to_json(const PyFrameLine& p) {
  return {{"type", "pyframe"}, {"id", p.id}, {"file", p.file}, {"function", p.function}, {"line", p.line}};
}

json to_json(const StackLine& s) {
  json frames = json::array();
  for (const StackFrame& f : s.frames) frames.push_back(frame_text(f));
  return {{"type", "stack"}, {"id", s.id}, {"frames", std::move(frames)}};
}

json to_json(const NameLine& n) { return {{"type", "name"}, {"id", n.id}, {"name", n.name}}; }

bool from_json(const json& j, ModuleLine& out) {
  auto path = as_string(member(&j, "path"));
  auto base = address(j, "base"), start = address(j, "start"), end = address(j, "end");
  if (!path || !base || !start || !end || *end <= *start) return false;
  // The spec names it loaded_ns; collectors write seen_ns.
  out = {*path, *base, *start, *end, as_string(member(&j, "build_id")).value_or(""),
         number(j, "loaded_ns").value_or(number(j, "seen_ns").value_or(0))};
  return true;
}

bool from_json(const json& j, UnloadedLine& out) {
  auto path = as_string(member(&j, "path"));
  auto base = address(j, "base");
  if (!path || !base) return false;
  out = {*path, *base, number(j, "unloaded_ns").value_or(0)};
  return true;
}

bool from_json(const json& j, PyFrameLine& out) {
  auto id = id_of(j);
  auto file = as_string(member(&j, "file")), function = as_string(member(&j, "function"));
  auto line = j.find("line");
  if (!id || !file || !function || line == j.end() || !line->is_number_integer()) return false;
  out = {*id, *file, *function, line->get<int64_t>()};
  return true;
}

bool from_json(const json& j, StackLine& out) {
  auto id = id_of(j);
  auto frames = j.find("frames");
  if (!id || frames == j.end() || !frames->is_array()) return false;
  out.id = *id;
  out.frames.clear();
  out.frames.reserve(frames->size());
  for (const json& f : *frames) {
    auto parsed = parse_frame(f);
    if (!parsed) return false;
    out.frames.push_back(*parsed);
  }
  return true;
}

bool from_json(const json& j, NameLine& out) {
  auto id = id_of(j);
  auto name = as_string(member(&j, "name"));
  if (!id || !name) return false;
  out = {*id, *name};
  return true;
}

std::optional<AttributionLine> attribution_line_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  auto type = as_string(member(&j, "type"));
  if (!type) return std::nullopt;
  if (*type == "module") return read_as<ModuleLine>(j);
  if (*type == "unloaded") return read_as<UnloadedLine>(j);
  if (*type == "pyframe") return read_as<PyFrameLine>(j);
  if (*type == "stack") return read_as<StackLine>(j);
  if (*type == "name") return read_as<NameLine>(j);
  return std::nullopt;
}

}  // namespace gmp
