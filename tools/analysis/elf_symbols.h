// Function names from an ELF64 file on disk: .symtab, else .dynsym, for symbolising the return
// addresses in attribution.jsonl after the process is gone. The file is mmapped read-only and
// every offset is bounds-checked, so a truncated, foreign or replaced file gives fewer names,
// never a crash. When the file has no .symtab (stripped) and a separate debug file is installed
// under /usr/lib/debug/.build-id/, its symbols are used too.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gmp::analysis {

class ElfSymbols {
 public:
  // nullptr with a one-line `why` when the file is missing, unreadable or not a little-endian
  // ELF64 object.
  static std::unique_ptr<ElfSymbols> open(const std::string& path, std::string* why);
  ~ElfSymbols();
  ElfSymbols(const ElfSymbols&) = delete;
  ElfSymbols& operator=(const ElfSymbols&) = delete;

  const std::string& build_id() const { return build_id_; }  // hex; empty when none
  bool has_debug_lines() const { return debug_lines_; }      // .debug_line: addr2line can say file:line
  bool has_symtab() const { return symtab_; }
  size_t symbol_count() const { return symbols_.size(); }

  struct Function {
    std::string_view name;  // as in the file (mangled)
    uint64_t start = 0;
  };
  // The function whose [start, start + size) holds `vaddr` (an ELF virtual address: a runtime
  // address minus the load bias). A symbol without a size holds everything up to the next one.
  std::optional<Function> function_at(uint64_t vaddr) const;

 private:
  struct Mapping {
    const uint8_t* data = nullptr;
    size_t size = 0;
  };
  struct Symbol {
    uint64_t start, size;
    std::string_view name;
    int rank;  // lower wins among symbols at one address: global, weak, local; .symtab first
  };
  ElfSymbols() = default;
  bool load(const std::string& path, bool main_file, std::string* why);
  void finish();

  std::vector<Mapping> maps_;
  std::vector<Symbol> symbols_;  // sorted by start, one per address
  std::string build_id_;
  std::string debug_file_;
  bool debug_lines_ = false;
  bool symtab_ = false;
};

}  // namespace gmp::analysis
