// Turns the stacks of attribution.jsonl into named frames, after the process is gone
// (docs/attribution.md, "Reading"): each return address goes to the module that held it when the
// stack was recorded, then to a function name from that file's symbol tables (elf_symbols.h) and,
// when addr2line is available and the file has line tables, to file:line (source_lines.h).
// Frames inside libgpumemprof.so are dropped, and Python frames replace the interpreter's own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attribution_reader.h"

namespace gmp::analysis {

struct Frame {
  bool python = false;
  std::string function;  // demangled C++ name or Python function; empty when unknown
  std::string module;    // native: the ELF object's path; empty when no module held the address
  uint64_t address = 0;  // native: the return address as recorded
  uint64_t offset = 0;   // native: address - load bias, the ELF virtual address in `module`
  std::string file;      // Python always; native when addr2line knew the line
  uint32_t line = 0;
  bool inlined = false;  // native: inlined into the frame that follows (same address)
  std::string note;      // "[build-id mismatch]", "[file missing]", "[unknown python frame]"

  // What reports show: "forward (train.py:42)", "alloc_a (prog.cpp:31)", "alloc_a [libx.so]",
  // "libx.so+0x1a2b [build-id mismatch]", "0x7f0012345678".
  std::string label() const;
  // The name for flame graphs and folded stacks: the function and, where known, its file and line
  // ("run() (train.cpp:103)"), so that two lines of one function that allocate are two boxes, and
  // an inlined function is a frame of its own; no module or note, which label() adds.
  std::string flame_name() const;
};

// Merged, innermost first.
using CallStack = std::vector<Frame>;
using StackTable = std::unordered_map<uint32_t, CallStack>;

std::string_view base_name(std::string_view path);
bool is_profiler_module(std::string_view path);     // libgpumemprof*
bool is_interpreter_module(std::string_view path);  // python3*, libpython*
// CUDA libraries, framework allocators (c10, torch, XLA) and the C/C++ runtime: code that is
// never the interesting answer to "who allocated this".
bool is_runtime_module(std::string_view path);
// The framework part of the above: PyTorch (libc10*, libtorch*) and XLA.
bool is_framework_module(std::string_view path);
// A function that only obtains memory (allocators, tensor constructors: "alloc", "::empty",
// "empty_" in its name), so it cannot say what the memory is for.
bool is_allocation_machinery(std::string_view function);
// A Python source file of an installed package, the standard library or the import system
// (site-packages, dist-packages, lib/pythonX.Y, "<frozen ...>"): the frames under user code.
bool is_library_python_file(std::string_view path);

std::string demangle(std::string_view name);

struct SymbolizerOptions {
  bool source_lines = true;  // run addr2line where it is available
};

class Symbolizer {
 public:
  explicit Symbolizer(const reader::Attribution& attribution, SymbolizerOptions options = {});
  ~Symbolizer();

  // The stacks `ids`, symbolised in one batch (one addr2line per ELF file) and merged. Ids that
  // attribution.jsonl does not define are left out.
  StackTable symbolize(const std::vector<uint32_t>& ids);

 private:
  struct File;
  File& file(const std::string& path);

  const reader::Attribution& attribution_;
  SymbolizerOptions options_;
  std::unordered_map<std::string, std::unique_ptr<File>> files_;
};

}  // namespace gmp::analysis
