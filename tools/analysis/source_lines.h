// file:line for native frames through binutils' addr2line, when it is on PATH: one process per
// ELF file with all of that file's addresses, so a report costs a handful of processes, not one
// per frame. Optional: without addr2line, or for a file without .debug_line, frames keep their
// function names from the symbol tables (elf_symbols.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gmp::analysis {

struct SourceLine {
  std::string function;  // demangled; empty when addr2line does not know it
  std::string file;      // empty when unknown
  uint32_t line = 0;
};

// True when an executable `addr2line` is on PATH and GPUMEMPROF_ADDR2LINE is not 0.
bool addr2line_available();

// For each ELF virtual address in `vaddrs`, the source locations addr2line gives for it, innermost
// first (an inlined call expands to several); an empty vector where it knows nothing. All empty
// when addr2line cannot be run or its output does not line up with the input.
std::vector<std::vector<SourceLine>> resolve_source_lines(const std::string& elf_path,
                                                          const std::vector<uint64_t>& vaddrs);

// Parses addr2line -a -f -C -i output for `count` addresses (exposed for tests).
std::vector<std::vector<SourceLine>> parse_addr2line_output(const std::string& out, size_t count);

}  // namespace gmp::analysis
