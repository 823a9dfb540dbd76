#include "attribution_reader.h"

#include <optional>
#include <sstream>
#include <variant>

#include <nlohmann/json.hpp>

#include "input_file.h"
#include "json_input.h"

namespace gmp::reader {
namespace {

// Applies one record; false when it is not one this reader understands.
bool apply(Attribution& a, const nlohmann::json& j, uint64_t seq) {
  std::optional<AttributionLine> line = attribution_line_from_json(j);
  if (!line) return false;
  if (auto* m = std::get_if<ModuleLine>(&*line)) {
    ModuleRecord r;
    static_cast<ModuleLine&>(r) = std::move(*m);
    r.loaded_seq = seq;
    a.modules.push_back(std::move(r));
  } else if (auto* u = std::get_if<UnloadedLine>(&*line)) {
    // An unload of an object never listed changes nothing.
    for (auto it = a.modules.rbegin(); it != a.modules.rend(); ++it) {
      if (it->unloaded_seq == UINT64_MAX && it->base == u->base && it->path == u->path) {
        it->unloaded_seq = seq;
        it->unloaded_ns = u->unloaded_ns;
        break;
      }
    }
  } else if (auto* p = std::get_if<PyFrameLine>(&*line)) {
    a.pyframes.emplace(p->id, std::move(*p));
  } else if (auto* s = std::get_if<StackLine>(&*line)) {
    a.stacks.emplace(s->id, StackRecord{std::move(s->frames), seq});
  } else if (auto* n = std::get_if<NameLine>(&*line)) {
    a.names.emplace(n->id, std::move(n->name));
  }
  return true;
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
