// The lines of attribution.jsonl (docs/attribution.md) as typed records: the collector writes each
// through to_json(), the tools read each through from_json(), and the record types and keys are
// spelled nowhere else. The strings come from outside the profiler (library paths, NVTX and mark
// names, Python file and function names) and may hold any bytes: print a line through json_text()
// (json_text.h), which never throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "stack_frame.h"

namespace gmp {

// {"type": "module"}: an ELF object the collector saw loaded.
struct ModuleLine {
  std::string path;
  uint64_t base = 0;            // load bias: an address's ELF virtual address is addr - base
  uint64_t start = 0, end = 0;  // [start, end) spans the PT_LOAD segments
  std::string build_id;         // GNU build id in hex; empty when the object has none
  uint64_t loaded_ns = 0;       // when the collector first saw it (event clock); 0 unknown
  bool operator==(const ModuleLine&) const = default;
};

// {"type": "unloaded"}: a module listed before is gone.
struct UnloadedLine {
  std::string path;
  uint64_t base = 0;
  uint64_t unloaded_ns = 0;     // 0 unknown
  bool operator==(const UnloadedLine&) const = default;
};

// {"type": "pyframe"}: a Python source location that stack frames name by id.
struct PyFrameLine {
  uint32_t id = 0;
  std::string file, function;
  int64_t line = 0;
  bool operator==(const PyFrameLine&) const = default;
};

// {"type": "stack"}: a call stack that events name by id.
struct StackLine {
  uint32_t id = 0;
  std::vector<StackFrame> frames;  // innermost first: native frames, then Python frames
  bool operator==(const StackLine&) const = default;
};

// {"type": "name"}: a range or mark name that events name by id.
struct NameLine {
  uint32_t id = 0;
  std::string name;
  bool operator==(const NameLine&) const = default;
};

using AttributionLine = std::variant<ModuleLine, UnloadedLine, PyFrameLine, StackLine, NameLine>;

// Addresses are written as hex strings ("0x7f12a0000000") because JSON numbers lose precision
// above 2^53; the module's load time as "seen_ns".
nlohmann::json to_json(const ModuleLine& m);
nlohmann::json to_json(const UnloadedLine& u);
nlohmann::json to_json(const PyFrameLine& p);
nlohmann::json to_json(const StackLine& s);
nlohmann::json to_json(const NameLine& n);

// Each reads a record of its type and never throws. False, `out` unspecified, when a required
// field is missing or of the wrong type: ids must be 1..2^32-1; addresses hex strings or plain
// non-negative numbers; a module needs path, base, start and end with end > start (its build_id
// defaults to "", its load time, "loaded_ns" or else "seen_ns", to 0); an unloaded record needs
// path and base (unloaded_ns defaults to 0); a pyframe needs file, function and an integer line;
// a stack needs an array of frames, each "0x..." or "py:<id>". The "type" key is not checked.
bool from_json(const nlohmann::json& j, ModuleLine& out);
bool from_json(const nlohmann::json& j, UnloadedLine& out);
bool from_json(const nlohmann::json& j, PyFrameLine& out);
bool from_json(const nlohmann::json& j, StackLine& out);
bool from_json(const nlohmann::json& j, NameLine& out);

// The record of the type `j` names; nullopt when `j` is not an object, names no known type, or
// its record does not read (above).
std::optional<AttributionLine> attribution_line_from_json(const nlohmann::json& j);

}  // namespace gmp
