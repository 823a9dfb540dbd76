// attribution.jsonl (docs/attribution.md): the module map, Python frames, stacks and range/mark
// names that trace events refer to by id. Read whole: it grows with distinct stacks and names, not
// with the number of events. Never throws: a partial last line (a killed process) and lines that
// are not records are counted and skipped.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <unordered_map>
#include <vector>

#include "attribution_records.h"

namespace gmp::reader {

// One loaded ELF object (a module line, attribution_records.h). `seq` numbers are the record's
// line in the file: the collector writes a module before the stacks whose frames lie in it and
// `unloaded` after it is gone, so the file order says which object held an address when a stack
// was written, even when a later dlopen reuses the address range.
struct ModuleRecord : ModuleLine {
  uint64_t unloaded_ns = 0;     // 0 while never seen unloaded
  uint64_t loaded_seq = 0;
  uint64_t unloaded_seq = UINT64_MAX;
};

using PyFrameRecord = PyFrameLine;
using StackFrame = gmp::StackFrame;

struct StackRecord {
  std::vector<StackFrame> frames;  // innermost first: native frames, then Python frames
  uint64_t seq = 0;                // line of the record
};

struct Attribution {
  bool present = false;           // the file exists and was read
  std::string error;              // it exists but cannot be read (input_file.h): one line naming it
  std::vector<ModuleRecord> modules;  // in file order
  std::unordered_map<uint32_t, PyFrameRecord> pyframes;
  std::unordered_map<uint32_t, StackRecord> stacks;
  std::unordered_map<uint32_t, std::string> names;
  uint64_t records = 0;           // lines taken
  uint64_t skipped_lines = 0;     // not JSON, not a known record, or a record with bad fields
  bool partial_last_line = false; // the file ends in a line cut short (not counted as skipped)

  const StackRecord* stack(uint32_t id) const;
  const PyFrameRecord* pyframe(uint32_t id) const;
  const std::string* name(uint32_t id) const;
  // The object that held `addr` when the record at line `seq` was written: the latest module
  // record before it that was not unloaded before it and spans addr. When none qualifies (a
  // library unloaded before the collector saw the stack), the latest record spanning addr at all.
  // nullptr when no module spans it.
  const ModuleRecord* module_at(uint64_t addr, uint64_t seq) const;
};

// Reads `path` (input_file.h: a regular file without holes); a missing file gives an empty
// Attribution with present = false, one that cannot be read the same with `error` set.
Attribution read_attribution(const std::string& path);
Attribution parse_attribution(std::istream& in);

}  // namespace gmp::reader
